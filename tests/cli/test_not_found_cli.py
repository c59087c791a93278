"""Not-found runs through the command (in process): status "not_found", exit 4,
schema_version 2 with a confidence; --min-confidence; the summary line says it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepsearch.agent.result import ResearchResult, UsageReport
from deepsearch.commands.render import summary_line
from tests.cli.test_config_and_doctor import run_in_process
from tests.cli.test_end_to_end import (  # noqa: F401  (fixtures)
    ANSWER_STEP,
    QUESTION,
    SEARCH,
    SECRET,
    VISIT,
    cli_args,
    router,
    search,
    web,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers

NOT_FOUND_STEP = {
    "think": "nothing fits",
    "action": {
        "answer": {
            "answer": "I looked for films shot in Leland; the pages read name none.",
            "supported": False,
        }
    },
}


def _run(servers: FakeSearchServers, steps: list[dict], tmp: Path, *extra: str) -> tuple[int, dict]:
    with FakeOpenAIServer(router(steps)) as llm:
        done = run_in_process(
            "research", QUESTION, *cli_args(servers), "--quiet", *extra,
            OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=llm.base_url, HOME=str(tmp),
        )  # fmt: skip
    return done.returncode, json.loads(done.stdout)


@pytest.mark.timeout(60)
def test_a_run_without_a_supported_answer_exits_4(
    web: object,  # noqa: F811  (the fixture)
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    code, out = _run(
        search, [SEARCH, VISIT, NOT_FOUND_STEP, NOT_FOUND_STEP], tmp_path, "--max-steps", "3"
    )
    assert code == 4
    assert out["schema_version"] == "2"
    assert out["status"] == "not_found" and "looked for films" in out["answer"]
    assert out["confidence"] == 0.0 and out["confidence_basis"]["supported"] is False


@pytest.mark.timeout(60)
def test_min_confidence_makes_a_weak_forced_answer_exit_4(
    web: object,  # noqa: F811  (the fixture)
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    steps = [SEARCH, VISIT, ANSWER_STEP]
    code, out = _run(search, steps, tmp_path, "--max-steps", "2", "--min-confidence", "0.95")
    assert code == 4 and out["status"] == "not_found"
    assert out["confidence"] < 0.95 and "Stephen King" in out["answer"]
    code, out = _run(search, steps, tmp_path, "--max-steps", "2", "--min-confidence", "0")
    assert code == 3 and out["status"] == "forced"


def test_min_confidence_outside_0_1_is_a_usage_error() -> None:
    done = run_in_process("research", "q?", "--min-confidence", "1.5")
    assert done.returncode == 2 and "--min-confidence" in done.stderr


def _result(status: str, confidence: float = 0.0) -> ResearchResult:
    from deepsearch.agent.judging.confidence import ConfidenceBasis

    usage = UsageReport(prompt_tokens=0, completion_tokens=0, total_tokens=0, budget=1000)
    basis = ConfidenceBasis(
        supported=False, checks="none", forced=False, sources=0, uncertain=False
    )
    return ResearchResult(
        question="q", answer="a", usage=usage, elapsed_s=0, status=status,  # type: ignore[arg-type]
        confidence=confidence, confidence_basis=basis,
    )  # fmt: skip


def test_not_found_maps_to_exit_4_and_reads_as_words() -> None:
    assert _result("not_found").exit_code == 4
    assert summary_line(_result("not_found")).startswith("not found in 0 steps")
    assert summary_line(_result("answered", 0.73)).endswith("confidence 0.73")
