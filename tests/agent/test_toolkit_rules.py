"""The toolkit's rules run on plain values: no state, no deps, no LLM client (their
loop steps, agent/steps/, read the run and call the model; tested with the loop)."""

from __future__ import annotations

from deepsearch.agent.citations.finalize import EDIT_MIN_CHARS, kept_edit, worth_editing
from deepsearch.agent.judging import honesty
from deepsearch.agent.judging.evaluator import pending_checks, pinned_first
from deepsearch.agent.judging.recheck import RecheckVerdict, rejection_line
from deepsearch.agent.retrieval.rewrite import RewriteReply, RewrittenQuery, proposed_queries
from deepsearch.agent.types import EvalMetric, KnowledgeItem


def test_the_reported_answer_prefers_the_accepted_then_a_real_candidate_then_the_note() -> None:
    assert honesty.reported_answer("final", "cand", "note", "answered") == ("final", "answered")
    assert honesty.reported_answer(None, "Paris.", "note", "forced") == ("Paris.", "forced")
    # A candidate that says nothing gives way to the model's own not-found report.
    assert honesty.reported_answer(None, "I don't know.", "note", "forced") == (
        "note",
        "not_found",
    )
    assert honesty.reported_answer(None, None, None, "forced") == (None, "forced")


def test_min_confidence_applies_to_forced_answers_strictly_below_the_threshold() -> None:
    assert honesty.below_min_confidence("forced", 0.49, 0.5)
    assert not honesty.below_min_confidence("forced", 0.5, 0.5)
    assert not honesty.below_min_confidence("answered", 0.1, 0.5)


def test_the_search_record_lists_five_queries_and_counts_pages() -> None:
    line = honesty.what_was_searched([f"q{i}" for i in range(7)], 1)
    assert line == 'Looked for: "q0", "q1", "q2", "q3", "q4"; read 1 page.'
    assert honesty.what_was_searched([], 2) == "Looked for: no searches were run; read 2 pages."
    assert honesty.not_found_text("  ", "X.") == "**Not found.** X."
    assert honesty.not_found_text(" why ", "X.") == "**Not found.** X.\n\nwhy"


def test_basis_of_a_direct_answer_and_of_an_interrupted_one() -> None:
    direct = honesty.confidence_basis(
        "answered", has_answer=True, trivial=True, uncertain=False, cited_urls=[]
    )
    assert direct.checks == "direct" and direct.supported and not direct.forced
    cut = honesty.confidence_basis(
        "interrupted",
        has_answer=True,
        trivial=False,
        uncertain=True,
        cited_urls=["https://a.org/1", "https://www.a.org/2", "https://b.org/"],
    )
    assert cut.checks == "none" and cut.forced and cut.uncertain and cut.sources == 2


def test_pending_checks_follow_check_order_and_skip_exhausted_ones() -> None:
    metrics = [
        EvalMetric(type="strict", attempts_left=1),
        EvalMetric(type="freshness", attempts_left=0),
        EvalMetric(type="definitive", attempts_left=2),
    ]
    assert pending_checks(metrics) == ["definitive", "strict"]


def test_the_strict_check_is_shown_pinned_items_then_the_newest_in_original_order() -> None:
    items = [KnowledgeItem(question=f"k{i}", answer="a", type="qa") for i in range(5)]
    items[0].pinned = True
    # Room for three items of cost 10: the pinned one, then the two newest.
    assert pinned_first(items, [10] * 5, 30) == [0, 3, 4]
    # An item too large is skipped; smaller older ones still fit.
    assert pinned_first(items, [10, 10, 10, 10, 25], 30) == [0, 2, 3]


def test_rewritten_queries_are_folded_deduped_and_keep_their_language() -> None:
    reply = RewriteReply(
        queries=[
            RewrittenQuery(q="  eiffel   tower height ", language=" FR "),
            RewrittenQuery(q="eiffel tower height", language="de"),
            RewrittenQuery(q="   "),
            RewrittenQuery(q="tour eiffel", language=""),
        ]
    )
    assert proposed_queries(reply) == {"eiffel tower height": "fr", "tour eiffel": None}


def test_the_editor_is_asked_only_about_long_or_multi_paragraph_answers() -> None:
    assert not worth_editing("x" * (EDIT_MIN_CHARS - 1))
    assert worth_editing("x" * EDIT_MIN_CHARS)
    assert worth_editing("short\nanswer")
    original = "word " * 100
    assert kept_edit(original, "word " * 50) == original  # a cut is refused
    assert kept_edit(original, " polished " + original) == "polished " + original.strip()


def test_a_contradiction_says_the_problem_or_else_the_reasoning() -> None:
    assert RecheckVerdict(consistent=False, problem="p", think="t").contradiction() == "p"
    assert RecheckVerdict(consistent=False, think="t").contradiction() == "t"
    assert rejection_line("x" * 300) == "answer rejected by the re-check: " + "x" * 200
