"""What the effort presets change in a run: reflect never offered (low), and the
accepted answer re-checked against a second, independent search (high)."""

from __future__ import annotations

from typing import Any

from deepsearch.agent.deps import AgentDeps
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.team import testing as team_world
from deepsearch.agent.team.recheck import MAX_RECHECKS
from deepsearch.agent.team.testing import FIGURES, QUESTION, World, parts_in
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.testing import FakeSearch
from tests.agent.helpers import make_deps, options

PARTS_FIGURES = [FIGURES[p] for p in parts_in(QUESTION)]
RECHECK_QUERY = "official census office 2020 release"  # what the world's re-check asks


def _props(request: CompletionRequest) -> dict[str, Any]:
    return dict((request.json_schema or {}).get("properties", {}))


def offered(request: CompletionRequest) -> set[str]:
    action = _props(request).get("action", {})
    return set(action.get("enum") or [action.get("const")])


def deps_for(router: Any) -> tuple[AgentDeps, Any, FakeSearch]:
    search, reader = team_world.web()
    deps, provider = make_deps(router, budget=300_000, search=search, reader=reader)
    return deps, provider, search


async def test_reflect_is_never_offered_when_the_options_turn_it_off() -> None:
    deps, provider, _ = deps_for(World())
    result = await ResearchRun(QUESTION, deps, options(reflect=False)).run()
    assert result.status == "answered"
    assert all("reflect" not in offered(c) for c in provider.calls_for("agent"))
    deps, provider, _ = deps_for(World())  # the same run with reflect on does offer it
    await ResearchRun(QUESTION, deps, options()).run()
    assert any("reflect" in offered(c) for c in provider.calls_for("agent"))


async def test_an_accepted_answer_is_rechecked_by_a_second_search() -> None:
    deps, provider, search = deps_for(World())
    result = await ResearchRun(QUESTION, deps, options(recheck=True)).run()
    assert result.status == "answered"
    assert RECHECK_QUERY in [q.q for q in search.queries]
    answer_step = [s for s in result.steps if s.action == "answer"][-1]
    assert "re-checked by a second search" in answer_step.detail
    verdicts = [c for c in provider.calls_for("evaluator") if "consistent" in _props(c)]
    assert len(verdicts) == 1


async def test_without_recheck_no_second_search_is_made() -> None:
    deps, provider, search = deps_for(World())
    await ResearchRun(QUESTION, deps, options()).run()
    assert RECHECK_QUERY not in [q.q for q in search.queries]
    assert not [c for c in provider.calls_for("evaluator") if "consistent" in _props(c)]


class Contradicting:
    """The world, with re-check verdicts that contradict the first `times` answers."""

    def __init__(self, times: int) -> None:
        self.world = World()
        self.left = times
        self.queries = 0

    def __call__(self, request: CompletionRequest) -> Any:
        props = _props(request)
        if request.tool == "evaluator" and "consistent" in props:
            self.left -= 1
            ok = self.left < 0
            return {"think": "", "consistent": ok, "problem": "" if ok else "another figure"}
        if request.tool == "evaluator" and "queries" in props:
            self.queries += 1  # a fresh query per re-check: repeats are never re-run
            return {"think": "verify", "queries": [f"{RECHECK_QUERY} {self.queries}"]}
        return self.world(request)


async def test_a_contradicted_answer_is_rejected_and_research_goes_on() -> None:
    deps, _, _ = deps_for(Contradicting(times=1))
    result = await ResearchRun(QUESTION, deps, options(recheck=True)).run()
    answers = [s.detail for s in result.steps if s.action == "answer"]
    assert answers[0].startswith("answer rejected by the re-check: another figure")
    assert "re-checked by a second search" in answers[-1]
    assert result.status == "answered"
    assert all(figure in result.answer for figure in PARTS_FIGURES)


async def test_rechecks_are_limited_so_disagreeing_sources_still_end() -> None:
    router = Contradicting(times=100)
    deps, _, _ = deps_for(router)
    result = await ResearchRun(QUESTION, deps, options(recheck=True)).run()
    rejected = [s for s in result.steps if "rejected by the re-check" in s.detail]
    assert len(rejected) == MAX_RECHECKS == router.queries
    assert result.status == "answered"  # accepted by the evaluator once re-checks ran out
