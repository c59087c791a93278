from __future__ import annotations

from deepsearch.agent.loop import ResearchRun
from tests.agent.helpers import make_deps, options, scripted
from tests.fakes.scripted_llm import ToolQueues

SEARCH = {
    "think": "look it up",
    "action": {"search": {"queries": ["eiffel tower completed"]}},
}
VISIT = {"think": "read", "action": {"visit": {"url_indices": [1]}}}
ANSWER = {"think": "done", "action": {"answer": {"answer": "It was completed in 1889."}}}


async def test_search_visit_answer_is_accepted() -> None:
    script = scripted([SEARCH, VISIT, ANSWER], checks=1)
    deps, provider = make_deps(script)
    result = await ResearchRun("When was the Eiffel Tower completed?", deps, options()).run()
    script.assert_complete()  # three steps, one answer check, nothing else
    assert result.status == "answered"
    assert "1889" in result.answer
    assert [s.action for s in result.steps] == ["search", "visit", "answer"]
    assert result.read_urls
    assert result.usage.total_tokens > 0
    assert result.usage.total_tokens <= result.usage.budget


async def test_direct_answer_at_step_one_skips_evaluation() -> None:
    script = scripted([ANSWER])  # no answer check queued: one would be an unexpected call
    deps, provider = make_deps(script)
    result = await ResearchRun("What is 1+1?", deps, options()).run()
    script.assert_complete()
    assert result.status == "answered"
    assert [s.action for s in result.steps] == ["answer"]
    evaluator_calls = [c for c in provider.calls if c.tool == "evaluator"]
    assert len(evaluator_calls) == 1  # only the question classification
    # a direct answer has no sources: it says so, and it is not finalized
    assert result.confidence_basis is not None and result.confidence_basis.checks == "direct"
    assert provider.calls_for("finalizer") == [] and result.references == []


async def test_a_cut_short_answer_leaves_without_unanchored_markers_or_links() -> None:
    script = ToolQueues()  # no call: the result is taken as it stands
    deps, _ = make_deps(script)
    run = ResearchRun("When was the Eiffel Tower completed?", deps, options())
    run.state.candidate_answer = (
        "Completed in 1889.[^1][^2] See [a source](https://unseen.example/x)."
    )
    snap = run.snapshot("interrupted")
    assert "[^" not in snap.answer and "unseen.example" not in snap.answer
    assert "Completed in 1889." in snap.answer and "a source" in snap.answer
    script.assert_complete()
