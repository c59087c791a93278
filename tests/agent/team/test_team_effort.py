"""What the effort presets change in a run: reflect never offered (low), and the
accepted answer re-checked against a second, independent search (high)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import team_world
from bench.team_world import FIGURES, QUESTION, World, parts_in
from deepsearch.agent.deps import AgentDeps
from deepsearch.agent.judging.recheck import MAX_RECHECKS
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.schema import allowed_actions
from deepsearch.errors import ProviderError, StructuredOutputError
from deepsearch.llm.base import CompletionRequest
from tests.agent.helpers import make_deps, options
from tests.fakes.memory_web import FakeSearch

PARTS_FIGURES = [FIGURES[p] for p in parts_in(QUESTION)]
RECHECK_QUERY = "official census office 2020 release"  # what the world's re-check asks


def _props(request: CompletionRequest) -> dict[str, Any]:
    return dict((request.json_schema or {}).get("properties", {}))


def offered(request: CompletionRequest) -> set[str]:
    return set(allowed_actions(request.json_schema or {}))


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


class FailingRecheck:
    """The world, with a re-check whose calls fail: the provider (HTTP 500 after the
    SDK's retries) or the search (every endpoint down)."""

    def __init__(self, error: Exception) -> None:
        self.world, self.error = World(), error

    def __call__(self, request: CompletionRequest) -> Any:
        if request.tool == "evaluator" and "queries" in _props(request):
            raise self.error
        return self.world(request)


@pytest.mark.parametrize(
    "error",
    [ProviderError("HTTP 500 from the API", provider="openai"), StructuredOutputError("garbled")],
)
async def test_a_recheck_that_fails_keeps_the_accepted_answer(error: Exception) -> None:
    deps, _, _ = deps_for(FailingRecheck(error))
    result = await ResearchRun(QUESTION, deps, options(recheck=True)).run()
    assert result.status == "answered", result.error
    answer_step = [s for s in result.steps if s.action == "answer"][-1]
    assert f"re-check skipped ({type(error).__name__})" in answer_step.detail
    assert all(figure in result.answer for figure in PARTS_FIGURES)


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


# ----------------------------------------------------------------- the presets


def settings_for(*, file: dict[str, Any] | None = None, tmp: Any = None, **flags: Any) -> Any:
    from deepsearch.config import load_config

    path = None
    if file is not None:
        path = tmp / "config.json"
        path.write_text(json.dumps(file), "utf-8")
    overrides = {f"agent.{k}": v for k, v in flags.items()}
    return load_config(environ={}, overrides=overrides, config_file=path)


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
def test_each_effort_sets_its_preset(effort: str) -> None:
    from deepsearch.config import EFFORT_PRESETS
    from deepsearch.runtime import run_options

    settings = settings_for(effort=effort).settings
    preset = EFFORT_PRESETS[effort]
    assert settings.agent.token_budget == preset.budget
    opts = run_options(settings)
    got = {k: getattr(opts, k) for k in ("max_steps", "max_bad_attempts", "direct_answer")}
    got |= {k: getattr(opts, k) for k in ("reflect", "team_size", "recheck")}
    assert got == preset.model_dump(exclude={"budget"})


def test_medium_is_the_shipped_configuration() -> None:
    from deepsearch.config import EFFORT_PRESETS
    from deepsearch.resources import default_config_path

    shipped = json.loads(default_config_path().read_text("utf-8"))["agent"]
    preset = EFFORT_PRESETS["medium"].model_dump(exclude={"budget"})
    assert {k: shipped[k] for k in preset} == preset


def test_explicit_settings_win_over_the_preset(tmp_path: Path) -> None:
    loaded = settings_for(effort="low", max_steps=40, team_size=3)
    agent = loaded.settings.agent
    assert (agent.max_steps, agent.team_size) == (40, 3)
    assert agent.max_bad_attempts == 1 and agent.reflect is False  # the rest of low
    assert loaded.sources["agent.reflect"] == "effort low"
    loaded = settings_for(file={"agent": {"effort": "high", "recheck": False}}, tmp=tmp_path)
    agent = loaded.settings.agent
    assert agent.recheck is False and agent.team_size == 2 and agent.token_budget == 1_000_000
    assert settings_for(effort="high", budget=50_000).settings.agent.token_budget == 50_000


def test_the_docs_list_each_presets_exact_settings() -> None:
    from deepsearch.config import EFFORT_PRESETS

    readme = (Path(__file__).parents[3] / "docs" / "configuration.md").read_text("utf-8")
    section = readme.split("## Team mode and effort", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| low") or line.startswith("| medium") or line.startswith("| high")
    ]

    def shown(value: object) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        return f"{value:,}"

    table = {row[0]: row[1:] for row in rows}
    assert set(table) == set(EFFORT_PRESETS)
    for name, preset in EFFORT_PRESETS.items():
        values = preset.model_dump()
        order = ["budget", "max_steps", "max_bad_attempts", "direct_answer", "reflect"]
        order += ["team_size", "recheck"]
        assert table[name] == [shown(values[k]) for k in order], name


async def test_low_effort_never_offers_reflect_and_high_rechecks_with_a_team() -> None:
    from deepsearch.runtime import run_options

    deps, provider, _ = deps_for(World())
    low = run_options(settings_for(effort="low").settings)
    await ResearchRun(QUESTION, deps, low).run()
    assert all("reflect" not in offered(c) for c in provider.calls_for("agent"))
    deps, provider, search = deps_for(World())
    high = run_options(settings_for(effort="high").settings)
    result = await ResearchRun(QUESTION, deps, high).run()
    assert len(result.team) == 2  # the planner's three parts, held to the team size
    assert RECHECK_QUERY in [q.q for q in search.queries]
    assert result.status == "answered"
    assert all(figure in result.answer for figure in PARTS_FIGURES)
