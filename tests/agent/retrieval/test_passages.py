"""Page chunks: a partition of the text on paragraph and sentence boundaries."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from deepsearch.agent.retrieval.passages import CHUNK_MAX, chunk_spans

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


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab .!?\n"), max_size=3000))
def test_chunk_spans_are_a_partition(text: str) -> None:
    spans = chunk_spans(text)
    assert "".join(text[a:b] for a, b in spans) == text
    assert all(0 < b - a <= CHUNK_MAX for a, b in spans)
