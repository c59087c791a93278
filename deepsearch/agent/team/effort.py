"""What an effort preset switches off in the loop's choices (low effort: no reflect)."""

from __future__ import annotations

from deepsearch.agent.deps import RunOptions
from deepsearch.agent.gating import Gate

NO_REFLECT = "not offered at this effort (agent.reflect is off)"


def withdraw_switched_off(gate: Gate, options: RunOptions) -> None:
    """Actions the options never allow are withdrawn for the whole run; the gate's rule
    "never leave the model without a move" still holds."""
    if not options.reflect:
        gate.withdrawn["reflect"] = NO_REFLECT
