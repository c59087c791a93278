"""A cost limit holds across a team (issue 34): each child gets a share of the
parent's dollars as it gets a share of its tokens, and every child's call holds and
records on the parent's tracker, so children running at once never cross the cap."""

from __future__ import annotations

import pytest

from bench.team_world import QUESTION, World
from deepsearch.agent.loop import ResearchRun
from tests.agent.helpers import options
from tests.agent.team.test_team import world_deps


async def uncapped_cost() -> float:
    deps, _ = world_deps(World())
    result = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    assert result.usage.cost_usd is not None and len(result.team) == 3
    return result.usage.cost_usd


@pytest.mark.parametrize("share", [0.9, 0.6, 0.4])
async def test_a_team_never_spends_more_than_the_cost_limit(share: float) -> None:
    cap = await uncapped_cost() * share
    deps, provider = world_deps(World())
    deps.llm.tracker.max_cost = cap
    result = await ResearchRun(QUESTION, deps, options(team_size=3)).run()
    assert result.team_not_formed is None and len(result.team) == 3, "the team ran"
    assert result.usage.cost_usd is not None and 0 < result.usage.cost_usd <= cap
    assert result.usage.max_cost == cap
    assert result.status in ("answered", "forced", "not_found")
    assert provider.calls, "it ran"
