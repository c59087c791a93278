"""Effort presets: what `--effort low|medium|high` means, and the smallest budget."""

from __future__ import annotations

from typing import Literal

Effort = Literal["low", "medium", "high"]
EFFORT_BUDGETS: dict[str, int] = {"low": 100_000, "medium": 500_000, "high": 1_000_000}
# The smallest budget a run can actually spend: an agent step's prompt is ~1k tokens
# plus its output, so this leaves a few steps, Beast Mode's 15% and the finalizer.
MIN_BUDGET = 10_000
