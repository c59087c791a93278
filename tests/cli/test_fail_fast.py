"""A broken search setup ends the run early with a named cause and the right exit code
(issue 10, item 1). In process: the point is the command's logic, not the process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepsearch.agent.result import ResearchResult, UsageReport
from tests.cli.test_config_and_doctor import closed_port_url, run_in_process
from tests.cli.test_end_to_end import SECRET, router
from tests.fakes.openai_server import FakeOpenAIServer

OPENAI = ["--llm-provider", "openai", "--no-cache", "--json"]


def _result(**fields: object) -> ResearchResult:
    usage = UsageReport(prompt_tokens=0, completion_tokens=0, total_tokens=0, budget=1000)
    return ResearchResult(question="q", answer="", usage=usage, elapsed_s=0, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "kind", "code"),
    [
        ("forced", "configuration", 2),
        ("failed", "configuration", 2),
        ("forced", "fatal", 1),
        ("failed", "fatal", 1),
        ("forced", "runtime", 3),
        ("forced", None, 3),
        ("answered", None, 0),
        ("interrupted", None, 130),
    ],
)
def test_the_exit_code_comes_from_the_result_data(status: str, kind: str | None, code: int) -> None:
    result = _result(status=status, error_kind=kind, error="x" if kind else None)
    assert result.exit_code == code


def test_a_search_url_that_is_no_url_fails_at_load() -> None:
    done = run_in_process(
        "research", "q?", "--searxng-url", "not-a-url", "--llm-provider", "openai"
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--searxng-url" in lines[0] and "not an http(s) URL" in lines[0]


def test_an_empty_corpus_folder_exits_2_naming_it(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "picture.png").write_bytes(b"\x89PNG")
    with FakeOpenAIServer(router([])) as llm:  # never asked: nothing is spent
        done = run_in_process(
            "research", "q?", *OPENAI, "--corpus", str(tmp_path / "notes"),
            OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=llm.base_url,
        )  # fmt: skip
        assert not llm.chat_requests, "nothing is spent on a corpus that cannot answer"
    assert done.returncode == 2
    assert str(tmp_path / "notes") in done.stderr and "no files to index" in done.stderr


@pytest.mark.timeout(30)
def test_a_dead_search_endpoint_ends_within_two_steps_with_a_named_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deepsearch.web.search import chain
    from tests.fakes.clock import FakeClock

    clock = FakeClock()  # the chain's pause before its second try: recorded, not waited
    monkeypatch.setattr(chain, "SystemClock", lambda: clock)
    search = {"think": "", "action": {"search": {"queries": ["query number 1"]}}}
    dead = closed_port_url()
    # The first search's failure ends the run: one step scripted, so a run that went
    # on would ask for a step nobody scripted (the promise is "within two steps").
    with FakeOpenAIServer(router([search])) as llm:
        done = run_in_process(
            "research", "Who directed the film?", *OPENAI, "--search-provider", "searxng",
            "--searxng-url", dead, "--allow-private-urls",
            OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=llm.base_url,
            DEEPSEARCH_CACHE_DIR=str(tmp_path / "cache"),
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "failed" and out["error_kind"] == "fatal"
    assert len(out["steps"]) <= 2
    assert 1.0 in clock.sleeps, "the dead endpoint was tried once more, after a pause"
    # where it went and what happened (issue 22, item 12), not a bare "ConnectError"
    assert f"searxng: network (ConnectError: connection refused by {dead})" in out["error"]


@pytest.mark.parametrize("value", ["not a host!", "wikipedia", "en.wikipedia.org,,a b"])
def test_a_host_list_that_cannot_match_anything_fails_at_load(value: str) -> None:
    done = run_in_process("research", "q?", "--only-hostnames", value, "--llm-provider", "openai")
    assert done.returncode == 2
    assert "--only-hostnames" in done.stderr and "not a host name" in done.stderr


def test_a_pasted_url_in_a_host_list_is_reduced_to_its_host() -> None:
    from deepsearch.config import load_config

    loaded = load_config(overrides={"agent.bad_hostnames": ["https://Example.COM/x", "a.org"]})
    assert loaded.settings.agent.bad_hostnames == ["example.com", "a.org"]
