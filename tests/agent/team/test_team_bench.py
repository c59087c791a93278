"""The team benchmark's instrument (bench/team.py) must not rot: one question per
world at zero latency, both team sizes, figures that say what happened."""

from __future__ import annotations

import pytest

from bench.team import measure, render
from bench.team_world import QUESTION


@pytest.mark.parametrize("hops", [1, 2])
async def test_both_team_sizes_answer_a_multi_part_question(hops: int) -> None:
    solo = await measure(QUESTION, 1, hops=hops, scale=0.0)
    team = await measure(QUESTION, 3, hops=hops, scale=0.0)
    assert solo.correct and team.correct
    assert (solo.children, team.children) == (0, 3)
    assert team.main_steps < solo.main_steps  # the parts were researched by the children
    assert solo.main_steps == 1 + 2 * hops * 3  # one part at a time: search + read per hop
    table = render([solo, team])
    assert "| 1 |" in table and "| 3 |" in table
