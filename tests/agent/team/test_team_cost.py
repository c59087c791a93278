"""A cost limit holds across a team (issue 34): each child gets a share of the
parent's dollars as it gets a share of its tokens, and every child's call holds and
records on the parent's tracker, so children running at once never cross the cap."""

from __future__ import annotations

import pytest

from bench.team_world import QUESTION, World
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.team.budget import ShareTracker, budget_shares
from deepsearch.llm.base import Usage
from deepsearch.llm.tracker import TokenTracker
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


def test_a_childs_dollars_are_its_token_shares_part_and_bind_with_the_parents() -> None:
    parent = TokenTracker(100_000, max_cost=0.01)
    parent.record("agent", Usage(prompt_tokens=5_000, completion_tokens=0), cost=0.002)
    (share, *_) = budget_shares(parent, 3)
    child = ShareTracker(share, parent)
    left_usd = 0.01 * 0.85 - 0.002
    assert child.max_cost == pytest.approx(left_usd * share / (parent.regular_budget - 5_000))
    assert child.max_cost is not None and child.max_cost < left_usd * 0.6 / 2
    # a call of the child's in flight holds on the parent too
    with child.hold(0.001):
        assert parent.remaining_usd == pytest.approx(0.01 - 0.002 - 0.001)
    assert parent.remaining_usd == pytest.approx(0.008)
    # the parent's dollars bind the child: spent elsewhere (a sibling), they are gone
    parent.record("agent", Usage(prompt_tokens=1, completion_tokens=0), cost=0.0079)
    assert child.remaining_usd == pytest.approx(0.0001)
    child.record("agent", Usage(prompt_tokens=10, completion_tokens=1), cost=0.00005)
    assert parent.cost_usd == pytest.approx(0.002 + 0.0079 + 0.00005)
    assert ShareTracker(share, TokenTracker(100_000)).max_cost is None  # no limit, none
