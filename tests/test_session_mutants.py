"""The session's edges that a fresh `make mutate` found unpinned on today's main
(issue 37, re-check)."""

from __future__ import annotations

from deepsearch.session import question_share


def test_a_question_of_10_percent_of_the_budget_or_more_is_noticed_as_docs_say() -> None:
    """docs/reliability.md: a question that alone takes 10% or more of the token budget
    gets a notice; ~4 characters a token."""
    assert question_share("x" * 4_000, 10_000) == (
        "the question alone is ~1,000 tokens, 10% of the 10,000-token budget, and every "
        "step sends it again: shorten it or raise --budget"
    )
    assert question_share("x" * 3_999, 10_000) is None  # 999 tokens: 9.99%
    assert question_share("x" * 40, 1) is not None  # any budget at all
    assert question_share("x" * 40, 0) is None  # no budget to share
