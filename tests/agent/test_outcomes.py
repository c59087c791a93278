"""A step's outcome decides what happens next (agent/loop.py `_act`, agent/gating.py
`Gate.after`): each outcome kind, mishandled, makes one of these fail."""

from __future__ import annotations

from typing import Any

import pytest

from deepsearch.agent.gating import Gate
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.outcomes import Accepted, Continue, Rejected, Stop, Unavailable
from deepsearch.agent.schema import allowed_actions
from deepsearch.agent.state import AgentState
from deepsearch.errors import SandboxUnavailable
from deepsearch.llm.base import CompletionRequest
from tests.agent.helpers import evaluator_reply, make_deps, options

Q = "How many moons do Mars and Jupiter have together?"


class VanishingSandbox:
    """Says it can run code, then finds at run time that it cannot (as a sandbox whose
    namespaces disappear mid-run does)."""

    def __init__(self) -> None:
        self.runs = 0

    def availability(self) -> tuple[bool, str]:
        return True, ""

    async def run(self, code: str, data: dict[str, Any]) -> Any:
        self.runs += 1
        raise SandboxUnavailable("user namespaces went away")


def _allowed(request: CompletionRequest) -> set[str]:
    return set(allowed_actions(request.json_schema or {}))


def _reply(steps: list[dict[str, Any]]) -> Any:
    queue = list(steps)

    def reply(request: CompletionRequest) -> Any:
        if request.tool == "agent":
            return queue.pop(0) if len(queue) > 1 else queue[0]
        if request.tool == "agent_beast":
            return {"think": "", "action": {"answer": {"answer": "beast guess"}}}
        if request.tool == "coder":
            return {"think": "", "code": "result = 1 + 1"}
        if request.tool == "finalizer":
            return request.messages[-1].content
        if request.tool == "query_rewriter":
            return {"think": "", "queries": []}
        return evaluator_reply(request)

    return reply


async def test_an_unavailable_action_is_never_offered_again() -> None:
    steps = [
        {"think": "", "action": {"search": {"queries": ["mars moons"]}}},
        {"think": "", "action": {"coding": {"problem": "2 + 79"}}},
        {"think": "", "action": {"reflect": {"questions": ["How many has Mars?"]}}},
        {"think": "", "action": {"search": {"queries": ["jupiter moons"]}}},
        {"think": "", "action": {"answer": {"answer": "97"}}},
    ]
    sandbox = VanishingSandbox()
    deps, provider = make_deps(_reply(steps), sandbox=sandbox)
    run = ResearchRun(Q, deps, options(max_steps=5, direct_answer=False))
    await run.run()
    allowed = [_allowed(c) for c in provider.calls_for("agent")]
    assert "coding" in allowed[1]  # offered until it turned out unusable
    assert sandbox.runs == 1
    # Step 3 forbids coding anyway (no action twice in a row); steps 4 and 5 only
    # because the sandbox said it cannot run code.
    assert all("coding" not in a for a in allowed[2:]), allowed
    assert run.gate.withdrawn == {"coding": "user namespaces went away"}
    assert run.state.steps[1].detail == "refused: user namespaces went away"


def test_the_gate_withdraws_an_unavailable_action_for_the_rest_of_the_run() -> None:
    gate = Gate()
    st = AgentState.start("Q?")
    st.step = 2
    gate.after("coding", Unavailable("coding", "no namespaces"))
    gate.after("visit", Continue("read 1"))
    st.step = 4
    assert "coding" not in gate.allowed(st).allowed()
    gate.after("visit", Continue("read 1"))
    assert "coding" not in gate.allowed(st).allowed()
    assert "coding" in Gate().allowed(st).allowed()  # the same state, nothing withdrawn


@pytest.mark.parametrize(
    ("outcome", "answer_next"),
    [
        (Rejected("answer rejected"), False),
        (Stop("no attempts left"), False),
        (Continue("sub-question answered"), True),
        (Accepted("answer accepted"), True),
    ],
)
def test_only_a_refused_answer_forbids_answering_next(outcome: Any, answer_next: bool) -> None:
    gate = Gate()
    st = AgentState.start("Q?")
    st.step = 3
    gate.after("answer", outcome)
    assert ("answer" in gate.allowed(st).allowed()) is answer_next


async def test_a_stop_outcome_ends_research_at_once() -> None:
    """A check out of attempts is a Stop: Beast Mode next, not another research step."""
    steps = [
        {"think": "", "action": {"search": {"queries": ["mars moons"]}}},
        {"think": "", "action": {"visit": {"url_indices": [1]}}},
        {"think": "", "action": {"answer": {"answer": "two"}}},
        {"think": "", "action": {"reflect": {"questions": ["Jupiter?"]}}},
    ]

    scripted = _reply(steps)

    def reply(request: CompletionRequest) -> Any:
        if request.tool == "evaluator" and "needs_definitive" not in str(request.json_schema):
            return {"think": "not definitive", "pass": False}
        return scripted(request)

    deps, _ = make_deps(reply)
    run = ResearchRun(Q, deps, options(max_steps=10, max_bad_attempts=1, direct_answer=False))
    result = await run.run()
    actions = [s.action for s in result.steps]
    assert actions[:3] == ["search", "visit", "answer"]
    assert "no definitive attempts left" in result.steps[2].detail
    assert actions[3:] == ["answer"]  # no research step after the Stop: Beast Mode's answer
    assert result.steps[3].detail == "Beast Mode answer"
    assert run.stop_reason == result.steps[2].detail


async def test_a_rejection_restarts_the_diary_from_its_lesson() -> None:
    from tests.agent.helpers import router

    steps = [
        {"think": "", "action": {"search": {"queries": ["eiffel"]}}},
        {"think": "", "action": {"visit": {"url_indices": [1]}}},
        {"think": "", "action": {"answer": {"answer": "1889"}}},
        {"think": "", "action": {"reflect": {"questions": ["Who built it?"]}}},
        {"think": "", "action": {"answer": {"answer": "1889"}}},  # Beast Mode's
    ]
    deps, provider = make_deps(router(steps, strict_pass=False))
    run = ResearchRun("When was the Eiffel Tower completed?", deps, options(max_steps=4))
    await run.run()
    prompts = [c.system for c in provider.calls_for("agent")]
    assert "Step 1: searched 'eiffel'" in prompts[2]  # the diary before the rejection
    after = prompts[3]
    assert "Step 1: searched" not in after and "Step 3: my answer was rejected" not in after
    assert "Why was this answer" in after  # the lesson replaces the old diary


async def test_a_usable_reply_resets_the_count_of_unusable_ones() -> None:
    """Two bad replies, a good one, two bad ones: never three in a row, so research
    goes on to the answer."""
    from deepsearch.agent.events import StepStarted

    events: list[Any] = []
    good = {
        3: {"think": "", "action": {"reflect": {"questions": ["Which moons?"]}}},
        6: {"think": "", "action": {"answer": {"answer": "97"}}},
    }

    others = _reply([good[6]])  # evaluator, finalizer: as in every test here

    def reply(request: CompletionRequest) -> Any:
        if request.tool in ("agent", "fallback"):
            step = [e for e in events if isinstance(e, StepStarted)][-1].step
            return good.get(step, "not JSON at all")
        return others(request)

    deps, _ = make_deps(reply, events=events)
    run = ResearchRun(Q, deps, options(max_steps=6, direct_answer=False))
    result = await run.run()
    assert [s.action for s in result.steps] == ["error"] * 2 + ["reflect"] + ["error"] * 2 + [
        "answer"
    ]
    assert result.status == "answered"
