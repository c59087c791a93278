"""What an effort preset switches off in the loop's choices (low effort: no reflect)."""

from __future__ import annotations

from dataclasses import replace

from deepsearch.agent.deps import RunOptions
from deepsearch.agent.schema import AllowFlags


def preset_flags(flags: AllowFlags, options: RunOptions) -> AllowFlags:
    """The previous step's flags minus what the options never allow. Applied before
    the gating rules, so their "never leave the model without a move" still holds."""
    return flags if options.reflect else replace(flags, reflect=False)
