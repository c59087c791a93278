"""The finalizer never lets unverified citations through: LLM markers, definitions
and links to URLs the run never saw."""

from __future__ import annotations

import re

from deepsearch.agent.citations.finalize import clean_unanchored, unlink_unseen
from deepsearch.agent.deps import RunOptions
from deepsearch.agent.state import AgentState, PageText
from deepsearch.agent.steps.finalize import finalize_answer
from deepsearch.llm.base import CompletionRequest
from tests.agent.helpers import make_deps

PAGE = PageText(
    url="https://a.org/e",
    title="E",
    text="The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, "
    "France. The tower is 330 metres (1,083 ft) tall, about the same height as an "
    "81-storey building.",
)
ANSWER = (
    "The tower is 330 metres (1,083 ft) tall, about the same height as an 81-storey "
    "building.[^1][^2] It stands in [Paris](https://a.org/e) "
    "([source](https://hallucinated.example/eiffel)). See https://also-made-up.org/x.\n\n"
    '[^1]: made up\n[^2]: "invented" — [t](https://y.example)\n'
)
MARKER = re.compile(r"\[\^(\d+)\]")


def state() -> AgentState:
    st = AgentState.start("How tall is the Eiffel Tower?")
    st.pages[PAGE.url] = PAGE
    return st


def echo(request: CompletionRequest) -> str:  # the editor keeps the answer as it is
    return request.messages[-1].content


async def test_without_references_llm_markers_and_definitions_go() -> None:
    deps, _ = make_deps(echo)
    text, refs = await finalize_answer(
        ANSWER, state(), deps, RunOptions(max_references=0), language="English", deadline=None
    )
    assert refs == []
    assert "[^" not in text and "made up" not in text and "invented" not in text
    assert text.startswith("The tower is 330 metres (1,083 ft) tall, about the same height")


async def test_with_references_only_seen_urls_stay_links() -> None:
    deps, _ = make_deps(echo)
    text, refs = await finalize_answer(
        ANSWER, state(), deps, RunOptions(max_references=10), language="English", deadline=None
    )
    body, _, definitions = text.partition("\n\n[^1]: ")
    assert len(refs) == 1 and refs[0].url == PAGE.url
    assert [int(n) for n in MARKER.findall(body)] == [1]
    assert "[Paris](https://a.org/e)" in body  # a URL the run read stays a link
    assert "(source)" in body and "hallucinated.example" not in text
    assert "See also-made-up.org/x." in body and "https://also-made-up.org" not in text
    assert definitions.rstrip().endswith("[E](https://a.org/e) (a.org)")


def test_unlink_unseen_forms_and_code() -> None:
    seen = ["https://www.a.org/e/", "https://b.org/p?q=1"]
    text = (
        '[A](https://a.org/e) [B](https://b.org/p?q=1) [C](https://c.org/x "t") '
        "<https://d.org/y> ![img](https://e.org/i.png) https://a.org/e, https://f.org/z.\n"
        "```\nhttps://code.example/keep\n```\n"
    )
    out = unlink_unseen(text, seen)
    assert "[A](https://a.org/e) [B](https://b.org/p?q=1) C d.org/y img https://a.org/e," in out
    assert "f.org/z." in out and "https://f.org" not in out
    assert "https://code.example/keep" in out  # code is left alone


def test_unlink_unseen_matches_pages_by_identity() -> None:
    seen = ["https://a.org/e?id=1&lang=en"]
    text = (
        "[A](http://www.a.org/e/?lang=en&id=1&utm_source=x) [B](https://a.org/e.) "
        "https://a.org/e?id=1&lang=en! [C](https://a.org/e?id=2)"
    )
    out = unlink_unseen(text, seen)
    assert out.startswith("[A](http://www.a.org/e/?lang=en&id=1&utm_source=x) B ")
    assert "https://a.org/e?id=1&lang=en!" in out  # the "!" ends the sentence, not the URL
    assert out.endswith(" C")


def test_clean_unanchored_for_direct_answers() -> None:
    raw = "```markdown\nParis is the capital.[^1][2] Also [^ 3].\n\n[^1]: fake\n[2]: https://x\n```"
    assert clean_unanchored(raw) == "Paris is the capital. Also.\n"
    assert clean_unanchored("See [docs](https://x.org/d).", seen=()) == "See docs.\n"
    assert clean_unanchored("See [docs](https://x.org/d).") == "See [docs](https://x.org/d).\n"


async def test_the_editor_runs_for_long_answers_and_not_for_a_short_one() -> None:
    from deepsearch.agent.citations.finalize import EDIT_MIN_CHARS
    from deepsearch.agent.steps.finalize import edit_answer

    def polish(request: CompletionRequest) -> str:
        return request.messages[-1].content.replace("tall", "high")

    deps, provider = make_deps(polish)
    short = "The tower is 330 metres tall."
    assert await edit_answer(short, deps, language="English", deadline=None) == short
    assert not provider.calls_for("finalizer")
    long = "The tower is 330 metres tall. " * (EDIT_MIN_CHARS // 20)
    edited = await edit_answer(long, deps, language="English", deadline=None)
    assert len(provider.calls_for("finalizer")) == 1 and "high" in edited
    two_paragraphs = "The tower is tall.\n\nIt is in Paris."
    assert "high" in await edit_answer(two_paragraphs, deps, language="English", deadline=None)
    assert len(provider.calls_for("finalizer")) == 2  # structure gets the editor too
