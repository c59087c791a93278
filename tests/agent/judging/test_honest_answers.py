"""Honest answers (issue 11, part 4): the model's own `supported` field decides "found"
from "gave up"; a not-found answer is never accepted; every result has a confidence."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from deepsearch.agent.actions.answer import handle_answer
from deepsearch.agent.judging.confidence import ConfidenceBasis, confidence, distinct_sources
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.outcomes import Continue, Rejected
from deepsearch.agent.result import ResearchResult
from deepsearch.agent.schema import AnswerPayload, step_schema
from deepsearch.agent.state import AgentState, EvalMetric
from deepsearch.agent.steps.evaluator import Evaluator
from deepsearch.prompts import render
from tests.agent.helpers import make_deps, options, router, scripted, step_context
from tests.fakes.scripted_llm import ToolQueues, scripted_client

Q = "When was the Eiffel Tower completed?"
SEARCH = {"think": "look", "action": {"search": {"queries": ["eiffel tower completed"]}}}
VISIT = {"think": "read", "action": {"visit": {"url_indices": [1, 2]}}}
ANSWER = {"think": "done", "action": {"answer": {"answer": "It was completed in 1889."}}}
NOT_FOUND_TEXT = "I looked for the completion date; the pages read only describe Paris."
NOT_FOUND = {
    "think": "nothing",
    "action": {"answer": {"answer": NOT_FOUND_TEXT, "supported": False}},
}


async def forced_run(answer: dict[str, Any] = ANSWER, **opts: Any) -> ResearchResult:
    """Two research steps, then Beast Mode answers (unjudged), on a strict script."""
    script = scripted([SEARCH, VISIT], beast=[answer])
    deps, _ = make_deps(script)
    result = await ResearchRun(Q, deps, options(max_steps=2, **opts)).run()
    script.assert_complete()
    return result


async def answered_run(answer: dict[str, Any] = ANSWER, **opts: Any) -> ResearchResult:
    """Search, visit, an answer that passes its one check, on a strict script."""
    script = scripted([SEARCH, VISIT, answer], checks=1)
    deps, _ = make_deps(script)
    result = await ResearchRun(Q, deps, options(**opts)).run()
    script.assert_complete()
    return result


def checks_asked(provider: Any) -> int:
    """Evaluator calls that judged an answer (not the question's classification)."""
    return sum(
        1
        for c in provider.calls_for("evaluator")
        if "needs_definitive" not in (c.json_schema or {}).get("properties", {})
    )


async def test_a_not_found_answer_at_step_one_is_not_accepted_and_research_goes_on() -> None:
    script = scripted([NOT_FOUND, SEARCH, VISIT, ANSWER], checks=1)
    deps, provider = make_deps(script)
    result = await ResearchRun(Q, deps, options()).run()
    script.assert_complete()
    assert [s.action for s in result.steps] == ["answer", "search", "visit", "answer"]
    assert "rejected" in result.steps[0].detail
    assert result.status == "answered" and "1889" in result.answer
    # definitive + strict for the real answer only: the not-found one cost no check
    assert checks_asked(provider) == 2


async def test_a_run_that_ends_without_a_supported_answer_is_not_found() -> None:
    script = scripted([SEARCH, VISIT, NOT_FOUND], beast=[NOT_FOUND])  # no check is asked
    deps, provider = make_deps(script)
    result = await ResearchRun(Q, deps, options(max_steps=3)).run()
    script.assert_complete()
    assert provider.calls_for("agent_beast")
    assert result.status == "not_found"
    assert "looked for the completion date" in result.answer
    assert result.confidence == 0.0 and result.confidence_basis is not None
    assert result.confidence_basis.supported is False
    assert checks_asked(provider) == 0


async def test_a_bare_not_found_answer_still_says_what_was_searched_and_read() -> None:
    bare = {"think": "", "action": {"answer": {"answer": "I could not find it in the sources I read.", "supported": False}}}  # fmt: skip
    deps, _ = make_deps(router([SEARCH, VISIT, bare, bare]))  # the last: Beast Mode's
    result = await ResearchRun(Q, deps, options(max_steps=3)).run()
    assert result.status == "not_found"
    assert result.answer.startswith('**Not found.** Looked for: "eiffel tower completed"; read ')
    assert "I could not find it in the sources I read." in result.answer


async def test_beast_mode_saying_not_found_overrides_a_rejected_candidate() -> None:
    replies = [SEARCH, VISIT, ANSWER, SEARCH]

    def reply(request: Any) -> Any:
        if request.tool == "agent_beast":
            return NOT_FOUND
        return base(request)

    base = router(replies, strict_pass=False)
    deps, _ = make_deps(reply)
    result = await ResearchRun(Q, deps, options(max_steps=4, direct_answer=False)).run()
    assert result.status == "not_found"
    assert result.answer.startswith("**Not found.** Looked for:")
    assert "1889" not in result.answer and NOT_FOUND_TEXT in result.answer


async def test_a_supported_beast_mode_answer_stays_forced_with_lower_confidence() -> None:
    forced, answered = await forced_run(), await answered_run()
    assert forced.status == "forced" and answered.status == "answered"
    assert forced.confidence_basis is not None and forced.confidence_basis.forced
    assert 0 < forced.confidence < answered.confidence <= 1
    assert answered.confidence_basis is not None
    assert answered.confidence_basis.checks == "passed"


async def test_an_answer_the_model_flags_uncertain_gets_a_lower_confidence() -> None:
    unsure = {**ANSWER, "action": {"answer": {"answer": "It was completed in 1889.", "uncertain": True}}}  # fmt: skip
    flagged, plain = await answered_run(unsure), await answered_run()
    assert flagged.status == plain.status == "answered"
    assert flagged.confidence_basis is not None and flagged.confidence_basis.uncertain
    assert flagged.confidence < plain.confidence


@pytest.mark.parametrize(("threshold", "status"), [(0.9, "not_found"), (0.01, "forced")])
async def test_min_confidence_turns_a_weak_forced_answer_into_not_found(
    threshold: float, status: str
) -> None:
    result = await forced_run(min_confidence=threshold)
    assert result.status == status
    assert "1889" in result.answer  # the unconfirmed answer is still shown
    if status == "not_found":
        assert result.answer.startswith("**Not found with enough confidence**")
        assert '"eiffel tower completed"' in result.answer  # what was looked for


async def test_min_confidence_keeps_a_forced_answer_exactly_at_the_threshold() -> None:
    # "below --min-confidence" is strict: an answer whose confidence equals it stays.
    plain = await forced_run()
    assert plain.status == "forced" and 0 < plain.confidence < 1
    for threshold, status in ((plain.confidence, "forced"), (plain.confidence + 0.01, "not_found")):
        result = await forced_run(min_confidence=threshold)
        assert result.confidence == plain.confidence
        assert result.status == status, threshold


async def test_an_interrupted_runs_answer_is_discounted_like_a_forced_one() -> None:
    script = ToolQueues()  # no call: the result is taken as it stands
    deps, _ = make_deps(script)
    run = ResearchRun(Q, deps, options())
    run.state.candidate_answer = "It was completed in 1889."
    interrupted, forced = run.snapshot("interrupted"), run.snapshot("forced")
    assert interrupted.confidence_basis is not None and interrupted.confidence_basis.forced
    assert interrupted.confidence == forced.confidence == 0.09  # 0.15 * 0.6: cut short
    assert interrupted.confidence < run.snapshot("answered").confidence
    script.assert_complete()


async def test_min_confidence_never_touches_an_accepted_answer() -> None:
    result = await answered_run(min_confidence=1.0)
    assert result.status == "answered"


@pytest.mark.parametrize("supported", [False, True])
async def test_a_not_found_sub_answer_is_not_pinned_as_knowledge(supported: bool) -> None:
    deps, _ = make_deps(lambda r: {"think": "ok", "pass": True})
    state = AgentState.start(Q)
    state.gaps, state.step = [Q, "Who built it?"], 1  # gaps[1 % 2]: the sub-question
    payload = AnswerPayload(answer=NOT_FOUND_TEXT, supported=supported)
    outcome = await handle_answer(payload, step_context(state, deps))
    pinned = [k for k in state.knowledge if NOT_FOUND_TEXT in k.answer]
    assert bool(pinned) is supported
    assert ("Who built it?" in state.gaps) is not supported
    assert isinstance(outcome, Rejected) is not supported
    assert isinstance(outcome, Continue) is supported


async def test_the_evaluator_never_accepts_a_not_found_answer_and_asks_nothing() -> None:
    client, provider = scripted_client(lambda r: {"think": "ok", "pass": True})
    metrics = [EvalMetric(type="definitive", attempts_left=2)]
    now = datetime(2026, 12, 1, tzinfo=UTC)
    evaluator = Evaluator(client)
    verdict = await evaluator.evaluate(Q, "1889", metrics, [], now=now, supported=False)
    assert not verdict.passed and verdict.type == "definitive"
    assert provider.calls == []
    assert (await evaluator.evaluate(Q, "1889", metrics, [], now=now)).passed


def test_confidence_follows_the_documented_formula() -> None:
    def c(**kw: Any) -> float:
        fields = {"supported": True, "checks": "passed", "forced": False, "sources": 3}
        return confidence(ConfidenceBasis(**{**fields, "uncertain": False, **kw}))

    assert c() == 1.0
    assert c(sources=1) == 0.73  # 0.15 + 0.45 + 0.40/3
    assert c(sources=7) == 1.0  # capped at three sources
    assert c(checks="direct", sources=0) == 0.38  # 0.15 + 0.225
    assert c(checks="none", forced=True) == 0.33  # (0.15 + 0.40) * 0.6
    assert c(sources=0, uncertain=True) == 0.42  # 0.60 * 0.7
    assert c(supported=False) == 0.0


def test_distinct_sources_counts_hosts() -> None:
    urls = ["https://www.a.org/x", "https://a.org/y", "https://b.org/", "file:///n/1.md"]
    assert distinct_sources(urls) == 3
    assert distinct_sources(["file:///n/1.md", "file:///n/2.md"]) == 2
    assert distinct_sources(["https://a.org/x", "https://WWW.A.org./y"]) == 1  # one host spelling


@pytest.mark.parametrize("prompt", ["actions/answer", "actions/beast"])
def test_the_prompts_ask_for_every_field_of_the_answer(prompt: str) -> None:
    text = render(prompt, language="English", requirements="")
    for name in set(AnswerPayload.model_fields) - {"answer"}:
        assert f"`{name}`" in text, name
    schema = step_schema(("answer",)).model_json_schema()
    answer = schema["$defs"]["AnswerPayload"]["properties"]
    assert {"supported", "uncertain"} <= set(answer)
    assert "not found" in answer["supported"]["description"]


async def test_beast_mode_marks_its_own_answer_uncertain() -> None:
    unsure = {**ANSWER, "action": {"answer": {"answer": "It was completed in 1889.", "uncertain": True}}}  # fmt: skip
    flagged, plain = await forced_run(unsure), await forced_run()
    assert flagged.status == plain.status == "forced"
    assert flagged.confidence_basis is not None and flagged.confidence_basis.uncertain
    assert flagged.confidence < plain.confidence


async def test_a_long_query_is_listed_whole_words_in_the_not_found_answer() -> None:
    """The "Looked for" list cut a query mid-word (issue 22, item 12)."""
    long_query = " ".join(f"eiffelword{i}" for i in range(30))  # 359 characters
    search = {"think": "", "action": {"search": {"queries": [long_query]}}}
    bare = {"think": "", "action": {"answer": {"answer": "I could not find it.", "supported": False}}}  # fmt: skip
    deps, _ = make_deps(router([search, VISIT, bare, bare]))  # the last: Beast Mode's
    result = await ResearchRun(Q, deps, options(max_steps=3)).run()
    assert result.status == "not_found"
    listed = result.answer.split('Looked for: "')[1].split('"')[0]
    assert 100 < len(listed) <= 200 and long_query.startswith(listed + " "), listed
