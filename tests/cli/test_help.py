"""Help that reads well (issue 10, item 8): grouped options, no placeholder on switches,
the usage line as users type it, one-line usage errors with a hint, a smallest budget
that can run, numbers with units, a header record at the top of each traced run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepsearch.agent.result import ResearchResult, UsageReport
from deepsearch.cli import run
from deepsearch.commands.render import summary_line
from deepsearch.config import MIN_BUDGET
from deepsearch.llm.tokens import count_tokens
from tests.cli.test_config_and_doctor import run_in_process
from tests.cli.test_end_to_end import ANSWER_STEP, SEARCH, SECRET, VISIT, router
from tests.cli.test_end_to_end import search as search  # noqa: F401 - pytest fixtures
from tests.cli.test_end_to_end import web as web  # noqa: F401
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers

FLAGS = ["--llm-provider", "openai", "--no-cache", "--json", "--search-provider", "searxng"]


def test_research_help_groups_options_and_shows_the_real_usage() -> None:
    text = run_in_process("research", "--help", COLUMNS="120").stdout
    assert 'Usage: deepsearch [OPTIONS] "QUESTION"' in text
    for panel in ("Providers", "Limits", "Output", "Web and sources"):
        assert f"─ {panel} ─" in text
    switches = [line for line in text.splitlines() if "--json" in line or "--no-cache" in line]
    assert switches and "<bool>" not in text and "<list" not in text
    budget = next(line for line in text.splitlines() if "--budget" in line)
    assert "TOKENS" in budget and f"x>={MIN_BUDGET}" in budget


@pytest.mark.parametrize(
    ("command", "switch"),
    [("research", "--json"), ("config", "--json"), ("doctor", "--json"),
     ("eval", "--allow-answer-key-hosts"), ("serve", "--insecure-no-auth")],
)  # fmt: skip
def test_no_command_shows_a_value_placeholder_on_a_switch(command: str, switch: str) -> None:
    text = run_in_process(command, "--help", COLUMNS="120").stdout
    assert "--help" in text and switch in text
    assert "<bool>" not in text, text


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--jsn", "q?"], ["No such option: --jsn", "(see: deepsearch research --help)"]),
        (["doctor", "--bogus"], ["No such option: --bogus", "(see: deepsearch doctor --help)"]),
        (["q?", "--budget", "lots"], ["--budget", "(see: deepsearch research --help)"]),
    ],
)
def test_usage_errors_are_one_line_with_a_hint(
    argv: list[str], needles: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err


def test_a_budget_below_the_smallest_that_can_run_is_refused() -> None:
    done = run_in_process("research", "q?", "--budget", str(MIN_BUDGET - 1), *FLAGS)
    assert done.returncode == 2 and "--budget" in done.stderr


def honest_usage(steps: list[dict[str, Any]]) -> Any:
    """The e2e router, but each reply reports the tokens its request really holds."""
    route = router(steps)

    def reply(body: dict[str, Any]) -> Reply:
        content = route(body)
        prompt = "".join(str(m.get("content", "")) for m in body["messages"])
        prompt += json.dumps(body.get("response_format") or {})
        text = content if isinstance(content, str) else json.dumps(content)
        usage = {"prompt_tokens": count_tokens(prompt), "completion_tokens": count_tokens(text)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return Reply(content=text, usage=usage)

    return reply


def test_the_smallest_budget_accepted_can_run(search: FakeSearchServers) -> None:  # noqa: F811
    with FakeOpenAIServer(honest_usage([SEARCH, VISIT, ANSWER_STEP])) as llm:
        done = run_in_process(
            "research", "Who directed the film shot in Leland?", "--budget", str(MIN_BUDGET),
            "--no-direct-answer", *FLAGS, "--searxng-url", search.base_url("searxng"),
            "--allow-private-urls", OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=llm.base_url,
        )  # fmt: skip
    out = json.loads(done.stdout)
    assert out["answer"], out  # an answer came out of the smallest budget
    assert out["usage"]["total_tokens"] <= MIN_BUDGET
    assert out["usage"]["by_tool"]["agent"]["calls"] >= 1


def test_large_numbers_render_with_units() -> None:
    usage = UsageReport(
        prompt_tokens=1, completion_tokens=1, total_tokens=210_919, budget=1_000_000
    )
    result = ResearchResult(question="q", answer="a", status="forced", usage=usage, elapsed_s=3.21)
    assert summary_line(result) == "forced in 0 steps, 3.2s, 210.9k/1M tokens, $0"


def test_each_traced_run_starts_with_a_header(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    for question in ("first question?", "second question?"):
        with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
            done = run_in_process(
                "research", question, *FLAGS, "--searxng-url", "http://127.0.0.1:9",
                "--trace", str(trace), OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=llm.base_url,
            )  # fmt: skip
        assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in trace.read_text("utf-8").splitlines()]
    headers = [r for r in records if r["kind"] == "run_start"]
    assert records[0]["kind"] == "run_start"
    assert [h["question"] for h in headers] == ["first question?", "second question?"]
    assert headers[0]["version"] and headers[0]["started_at"]
    assert headers[0]["settings"]["search.providers"] == ["searxng"]
    assert headers[0]["settings"]["keys.openai_api_key"].startswith("****")
    assert SECRET not in trace.read_text("utf-8")


def test_the_root_help_lists_each_command_with_its_whole_line() -> None:
    """click cut each line at 45 characters, mid-sentence (issue 22, item 12)."""
    from deepsearch.commands.common import COMMAND_HELP
    from tests.cli.inprocess import run_cli_in_process

    # cli.run as the console script calls it: the fast root help, commands not imported
    text = " ".join(run_cli_in_process("--help", env={"COLUMNS": "200"}).stdout.split())
    for name, line in COMMAND_HELP.items():
        assert f"{name} {line}" in text, text
