"""Effort presets: what `--effort low|medium|high` means (a budget and behaviour), and
the smallest budget. docs/configuration.md, "Team mode and effort", lists them (a test checks it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Effort = Literal["low", "medium", "high"]


class EffortPreset(BaseModel):
    """What an effort level sets; a key set by a flag, the environment or the user file
    wins over it (loading.apply_effort_preset)."""

    model_config = ConfigDict(frozen=True)
    budget: int
    max_steps: int
    max_bad_attempts: int
    direct_answer: bool
    reflect: bool
    team_size: int
    recheck: bool


EFFORT_PRESETS: dict[str, EffortPreset] = {
    # speed: few steps, no reflect, one evaluation attempt, a smaller budget
    "low": EffortPreset(
        budget=100_000, max_steps=10, max_bad_attempts=1, direct_answer=True,
        reflect=False, team_size=1, recheck=False,
    ),
    "medium": EffortPreset(  # balanced: the shipped config.json values
        budget=500_000, max_steps=100, max_bad_attempts=2, direct_answer=True,
        reflect=True, team_size=1, recheck=False,
    ),
    # thorough: a team of two when the planner splits, more attempts, a re-check
    "high": EffortPreset(
        budget=1_000_000, max_steps=100, max_bad_attempts=3, direct_answer=True,
        reflect=True, team_size=2, recheck=True,
    ),
}  # fmt: skip
EFFORT_BUDGETS: dict[str, int] = {name: p.budget for name, p in EFFORT_PRESETS.items()}
# The agent.* keys a preset fills (the budget goes through AgentConfig.token_budget).
PRESET_KEYS = ("max_steps", "max_bad_attempts", "direct_answer", "reflect", "team_size", "recheck")
# The smallest budget a run can actually spend: an agent step's prompt is ~1k tokens
# plus its output, so this leaves a few steps, Beast Mode's 15% and the finalizer.
MIN_BUDGET = 10_000
# The most concurrent sub-researches a team may have (flag, config key and server knob).
MAX_TEAM_SIZE = 8
