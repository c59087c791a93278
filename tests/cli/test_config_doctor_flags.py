"""`config` and `doctor` answer the real question (issue 10, item 7): what a run would
use and why, compact by default, the research flags accepted, doctor's full table even
with nothing configured, "skipped" rows, corpus documents counted, --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepsearch.commands import doctor_cmd
from deepsearch.commands.checks import Check
from tests.cli.test_config_and_doctor import (
    SECRET,
    closed_port_url,
    run_in_process,
    sdk_retries_at_once,
)
from tests.fakes.search_servers import FakeSearchServers


def config_json(*args: str, **env: str) -> dict[str, dict[str, object]]:
    done = run_in_process("config", "--json", *args, **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_config_says_what_a_run_would_use_and_why() -> None:
    rows = config_json(OPENAI_API_KEY=SECRET)
    run = rows["run"]
    assert run["llm_provider"] == {"value": "openai", "why": "OPENAI_API_KEY is set"}
    assert run["model"]["value"] == "gpt-4o-mini" and "default" in str(run["model"]["why"])
    assert run["search"]["value"] == ["duckduckgo"]
    # Typed values under the flags' own names (issue 22, item 11): data, not display text.
    assert run["budget"] == {"value": 500_000, "why": "effort medium (default)"}
    assert run["max_steps"]["value"] == 100 and run["timeout_s"]["value"] is None
    assert run["team_size"]["value"] == 1 and run["endpoint"]["value"] is None
    assert SECRET not in json.dumps(rows)
    # The setting itself says the choice is automatic, not "-" beside "openai" above
    # (JSON keeps the real value: null).
    assert rows["llm.provider"]["value"] is None
    lines = run_in_process("config", OPENAI_API_KEY=SECRET, COLUMNS="200").stdout.splitlines()
    assert any(line.startswith("llm.provider = auto") for line in lines), lines


def test_config_takes_the_research_flags(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    rows = config_json(
        "--model", "gpt-x", "--search-provider", "searxng", "--searxng-url", "http://s.test",
        "--corpus", str(tmp_path / "notes"), "--budget", "20000", OPENAI_API_KEY=SECRET,
    )  # fmt: skip
    assert rows["llm.model"] == {"value": "gpt-x", "source": "--model"}
    assert rows["run"]["model"] == {"value": "gpt-x", "why": "llm.model from --model"}
    assert rows["run"]["search"]["value"] == ["searxng", "local"]
    assert rows["run"]["corpus"]["value"] == str((tmp_path / "notes").resolve())
    assert rows["run"]["budget"] == {"value": 20_000, "why": "agent.budget from --budget"}
    table = run_in_process(
        "config",
        "--model",
        "gpt-x",
        "--search-provider",
        "searxng",
        "--searxng-url",
        "http://s.test",
        "--corpus",
        str(tmp_path / "notes"),
        "--budget",
        "20000",
        OPENAI_API_KEY=SECRET,
        COLUMNS="200",
    ).stdout
    assert "run: search = searxng + local corpus (fused)" in table  # the table's own text
    assert "run: budget = 20k tokens" in table


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--effort", "extreme"], "--effort"),
        (["--searxng-url", "nope"], "not an http(s) URL"),
        (["--max-steps", "0"], "--max-steps"),
        (["what is this"], "takes no question"),
    ],
)
def test_bad_research_flags_on_config_are_one_line(args: list[str], needle: str) -> None:
    from deepsearch.cli import run

    for command in ("config", "doctor"):
        done = run_in_process(command, *args)
        assert done.returncode == 2, (command, done.stdout)
        assert needle in done.stderr
    assert run(["config", *args]) == 2


def test_config_is_compact_unless_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    compact = run_in_process("config", OPENAI_API_KEY=SECRET).stdout.splitlines()
    full = run_in_process("config", "--all", OPENAI_API_KEY=SECRET).stdout.splitlines()
    assert compact[0].startswith("run: llm provider = openai")
    assert not [line for line in compact if ".tools." in line]
    assert not [
        line
        for line in compact
        if line.startswith(("llm.providers.gemini", "llm.providers.ollama"))
    ]
    assert [line for line in full if ".tools." in line]
    # 74: agent.team_size, reflect, recheck and the run's team-size line joined;
    # 76: llm.prices and agent.max_cost (docs/cost.md); 78: history.enabled and history.dir;
    # 80: the run's config file and cache lines (issue 36, item 14)
    assert len(compact) < 80 and len(full) > 110


def test_config_says_the_team_size_a_run_would_use_and_why() -> None:
    lines = run_in_process("config", OPENAI_API_KEY=SECRET).stdout.splitlines()
    assert "run: team size = 1 (no split)  (default)" in lines
    lines = run_in_process("config", "--effort", "high", OPENAI_API_KEY=SECRET).stdout.splitlines()
    assert "run: team size = up to 2 sub-researches  (effort high)" in lines
    lines = run_in_process(
        "config", "--effort", "high", "--team-size", "3", OPENAI_API_KEY=SECRET
    ).stdout.splitlines()
    assert "run: team size = up to 3 sub-researches  (--team-size)" in lines


def test_doctor_probes_the_search_the_flags_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk_retries_at_once(monkeypatch)
    with FakeSearchServers() as servers:
        servers.always(
            "searxng",
            200,
            {"results": [{"title": "Python", "url": "https://python.org", "content": "x"}]},
        )
        done = run_in_process(
            "doctor", "--json", "--search-provider", "searxng",
            "--searxng-url", servers.base_url("searxng"), "--no-cache",
            OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=closed_port_url() + "/v1",
        )  # fmt: skip
    rows = {r["name"]: r for r in json.loads(done.stdout)["checks"]}
    assert (
        rows["search searxng"]["status"] == "ok" and "1 result" in rows["search searxng"]["detail"]
    )
    assert rows["cache folder"]["status"] == "skipped"  # --no-cache
    assert rows["llm endpoint"]["status"] == "fail"
    assert rows["structured output"]["status"] == "skipped"
    assert done.returncode == 1


def test_doctor_counts_the_corpus_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk_retries_at_once(monkeypatch)
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nAbout magma number {i}.", encoding="utf-8")
    done = run_in_process(
        "doctor", "--json", "--corpus", str(notes), OPENAI_API_KEY=SECRET,
        OPENAI_BASE_URL=closed_port_url() + "/v1", DEEPSEARCH_CACHE_DIR=str(tmp_path / "c"),
    )  # fmt: skip
    rows = {r["name"]: r for r in json.loads(done.stdout)["checks"]}
    assert rows["search local"]["status"] == "ok"
    assert rows["search local"]["detail"].startswith("3 documents indexed")


def test_a_skipped_check_reads_skipped_in_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    sdk_retries_at_once(monkeypatch)
    done = run_in_process(
        "doctor", "--search-provider", "searxng", "--searxng-url", closed_port_url(),
        OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=closed_port_url() + "/v1",
    )  # fmt: skip
    structured = next(line for line in done.stdout.splitlines() if "structured output" in line)
    assert "skipped" in structured and "FAIL" not in structured


def test_an_unwritable_cache_folder_fails(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = run_in_process(
        "doctor", "--json", DEEPSEARCH_CACHE_DIR=str(blocker / "cache"),
        DEEPSEARCH_SEARCH_PROVIDER="searxng", SEARXNG_URL=closed_port_url(),
    )  # fmt: skip
    rows = {r["name"]: r for r in json.loads(done.stdout)["checks"]}
    assert (
        rows["cache folder"]["status"] == "fail"
        and "not writable" in rows["cache folder"]["detail"]
    )


def test_one_more_check_plugs_in_at_one_place(monkeypatch: pytest.MonkeyPatch) -> None:
    async def extraction(loaded: object) -> list[Check]:
        return [Check("page extraction", True, "fine")]

    monkeypatch.setattr(doctor_cmd, "CHECK_GROUPS", [*doctor_cmd.CHECK_GROUPS, extraction])
    done = run_in_process(
        "doctor", "--json", "--search-provider", "searxng", "--searxng-url", closed_port_url()
    )
    names = [r["name"] for r in json.loads(done.stdout)["checks"]]
    assert names[-1] == "page extraction"
