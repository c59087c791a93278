"""C1 control characters (U+0080-U+009F: `\\x9b` is a one-byte CSI, the start of a
terminal escape) from the model and from the pages read never reach the output: not
the answer, not a quote, on the terminal or in `--json` (tests/server has serve's)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from deepsearch.agent.result import ResearchResult, UsageReport
from deepsearch.agent.types import Reference
from deepsearch.frontend.output import safe_result
from tests.cli.test_end_to_end import (
    ANSWER,
    FIXTURE,
    SEARCH,
    VISIT,
    cli_args,
    page_html,
    router,
    run_in_process,
    slug,
)
from tests.cli.test_end_to_end import search as search  # noqa: F401 - pytest fixture
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer, _text

C1 = "".join(chr(c) for c in range(0x80, 0xA0))
ANY_C1 = re.compile("[\x80-\x9f]")
# The model's answer carries every C1 character, as text copied from a page can.
LACED_STEP = {
    "think": "enough",
    "action": {"answer": {"answer": ANSWER.replace("Stephen King.", f"Stephen King.{C1}")}},
}


def laced(text: str) -> str:
    """Every sentence of a page with the C1 characters in its middle."""
    return re.sub(r"\b(is|was) ", lambda m: f"{m.group(1)} {C1} ", text)


@pytest.fixture
def web() -> Iterator[LoopbackServer]:
    routes = {
        f"/wiki/{slug(t)}": _text(page_html(t, laced(p)), "text/html; charset=utf-8")
        for t, p in FIXTURE["paragraphs"].items()
    }
    with LoopbackServer(routes=routes) as server:
        yield server


def test_json_output_has_no_c1_character_in_answer_or_quotes(
    web: LoopbackServer,
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer(router([SEARCH, VISIT, LACED_STEP])) as llm:
        done = run_in_process(llm, search, "--quiet", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "Stephen King" in out["answer"] and out["references"]
    assert not ANY_C1.search(done.stdout), "a C1 character left in the JSON"
    assert not ANY_C1.search(json.dumps(out, ensure_ascii=False))


def test_terminal_output_has_no_c1_character(
    web: LoopbackServer,
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    args = [a for a in cli_args(search) if a != "--json"]
    with FakeOpenAIServer(router([SEARCH, VISIT, LACED_STEP])) as llm:
        done = run_in_process(llm, None, *args, tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Stephen King" in done.stdout and "[^1]:" in done.stdout
    assert not ANY_C1.search(done.stdout + done.stderr)


def test_every_c1_character_leaves_answers_and_quotes() -> None:
    # HTML extraction already drops these characters from a page; a source that keeps
    # them (a text file, a search snippet) must still be cleaned on the way out.
    ref = Reference(url="https://a.org/x", title=f"T{C1}", quote=f"The{C1} quote")
    usage = UsageReport(prompt_tokens=1, completion_tokens=1, total_tokens=2, budget=1000)
    result = ResearchResult(
        question="q", answer=f"The{C1} answer.[^1]\n\n[^1]: \"The{C1} quote\"",
        references=[ref], status="answered", usage=usage, elapsed_s=1,
    )  # fmt: skip
    cleaned = safe_result(result)
    assert cleaned.answer == 'The answer.[^1]\n\n[^1]: "The quote"'
    assert (cleaned.references[0].quote, cleaned.references[0].title) == ("The quote", "T")
