"""One cap on a question's length, whichever way it comes in (issue 36, item 8), and a
notice when the question alone takes a large share of the token budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepsearch.errors import UsageError
from deepsearch.library import research
from deepsearch.session import question_share
from deepsearch.text import MAX_QUESTION_CHARS
from tests.cli.inprocess import run_cli_in_process
from tests.cli.test_end_to_end import ANSWER_STEP, cli_env, router
from tests.fakes.openai_server import FakeOpenAIServer

LONG = "word " * (MAX_QUESTION_CHARS // 5 + 10)


@pytest.mark.parametrize("stdin", [False, True], ids=["argument", "stdin"])
def test_a_question_over_the_cap_is_refused_before_any_call(stdin: bool, tmp_path: Path) -> None:
    with FakeOpenAIServer(router([])) as llm:
        argv = ["-"] if stdin else [LONG]
        done = run_cli_in_process(
            *argv, "--llm-provider", "openai", stdin=LONG if stdin else "",
            env=cli_env(llm, tmp_path),
        )  # fmt: skip
        assert not llm.requests
    assert done.returncode == 2
    assert f"longer than {MAX_QUESTION_CHARS:,} characters" in done.stderr


def test_the_library_has_the_same_cap() -> None:
    with pytest.raises(UsageError, match="longer than 100,000 characters"):
        research(LONG)


def test_a_question_taking_much_of_the_budget_is_noticed(tmp_path: Path) -> None:
    question = "Which film? " + "context " * 2_500  # ~20,000 characters: ~5,000 tokens
    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        done = run_cli_in_process(
            question, "--llm-provider", "openai", "--budget", "30000", "--no-cache",
            env=cli_env(llm, tmp_path),
        )  # fmt: skip
    assert (
        "the question alone is ~5,0" in done.stderr and "of the 30,000-token budget" in done.stderr
    )
    assert question_share("short?", 30_000) is None
