"""Query-aware passage selection and budget trimming."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from deepsearch.agent.retrieval.passages import (
    CHUNK_MAX,
    SEPARATOR,
    chunk_spans,
    num_windows,
    select_passages,
    trim_to_budget,
)
from deepsearch.agent.retrieval.similarity import LexicalSimilarity

LEX = LexicalSimilarity()
FILLER = "The committee discussed budgets, parking rules and the cafeteria menu at length. "


def page(sections: list[str], filler_paragraphs: int = 12) -> str:
    """Sections separated by long runs of off-topic paragraphs."""
    blocks = []
    for section in sections:
        blocks.extend(FILLER * 6 for _ in range(filler_paragraphs))
        blocks.append(section)
    blocks.extend(FILLER * 6 for _ in range(filler_paragraphs))
    return "\n\n".join(blocks)


def test_chunk_spans_cover_text_and_respect_size() -> None:
    text = page(["The Eiffel Tower was completed in 1889."])
    spans = chunk_spans(text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a == prev_b for (_, prev_b), (a, _) in zip(spans, spans[1:], strict=False))
    assert all(b - a <= CHUNK_MAX for a, b in spans)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab .!?\n"), max_size=3000))
def test_chunk_spans_are_a_partition(text: str) -> None:
    spans = chunk_spans(text)
    assert "".join(text[a:b] for a, b in spans) == text
    assert all(0 < b - a <= CHUNK_MAX for a, b in spans)


def test_num_windows_follows_reference() -> None:
    assert num_windows(12_000, 6000, 5) == 2
    assert num_windows(20_000, 6000, 5) == 3
    assert num_windows(100_000, 6000, 5) == 5


async def test_short_pages_kept_whole() -> None:
    text = "short page " * 100
    assert await select_passages(text, "anything", LEX) == text


async def test_selects_relevant_sections_in_page_order() -> None:
    late = "Gustave Eiffel's company completed the Eiffel Tower in March 1889 for the World's Fair."
    early = "The Eiffel Tower height is 330 metres including antennas; the Eiffel Tower was built of iron."
    text = page([early, late], filler_paragraphs=40)
    assert len(text) > 50_000
    out = await select_passages(text, "when was the Eiffel Tower completed", LEX)
    assert late in out and early in out
    assert out.index(early) < out.index(late)  # page order, not score order
    assert len(out) < len(text) * 0.8
    parts = out.split(SEPARATOR)
    assert all(part in text for part in parts)  # every window is a verbatim slice
    assert len(parts) <= num_windows(len(text), 6000, 5)
    assert all(len(part) <= 6000 for part in parts)


async def test_irrelevant_question_keeps_the_head() -> None:
    text = page(["nothing to see"], filler_paragraphs=30)
    out = await select_passages(text, "zzzz qqqq", LEX)
    assert text.startswith(out.split(SEPARATOR)[0])


def test_trim_to_budget() -> None:
    text = "First sentence here. Second sentence is longer than the first one. Third."
    assert trim_to_budget(text, 1000) == text
    cut = trim_to_budget(text, 50)
    assert len(cut) <= 50 and cut.endswith("[…]")
    assert cut.startswith("First sentence here.")
    assert trim_to_budget("x" * 100, 3) == "xxx"


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=500), st.integers(min_value=0, max_value=600))
def test_trim_never_exceeds_budget(text: str, budget: int) -> None:
    out = trim_to_budget(text, budget)
    assert out == text if len(text) <= budget else len(out) <= budget
    if len(text) > budget:
        assert text.startswith(out.removesuffix(" […]"))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [FILLER * 3, "Eiffel Tower facts. " * 10, "x" * 700, "\n\n", "Short line.\n"]
        ),
        min_size=1,
        max_size=120,
    ),
    st.sampled_from(["Eiffel Tower", "committee budgets", ""]),
)
async def test_selection_properties(blocks: list[str], question: str) -> None:
    text = "".join(blocks)
    out = await select_passages(text, question, LEX, window_chars=2000, keep_whole_below=4000)
    if len(text) < 4000:
        assert out == text
        return
    parts = out.split(SEPARATOR)
    assert len(parts) <= num_windows(len(text), 2000, 5)
    cursor = 0
    for part in parts:  # verbatim, non-overlapping slices in page order
        found = text.find(part, cursor)
        assert found >= 0
        cursor = found + len(part)
    assert all(len(part) <= 2000 for part in parts)
