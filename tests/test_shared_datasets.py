"""Regression guards over the shared datasets (skipped cleanly without ../shared)."""

from __future__ import annotations

from pathlib import Path

from bench.parse_ladder import _ours, load_cases, score


def test_parse_ladder_never_accepts_a_must_fail_case(shared_dir: Path) -> None:
    cases = load_cases(shared_dir / "data" / "json_repair_cases")
    assert len(cases) == 645
    results = [score(_ours, case) for case in cases]
    assert sum(bad for _, bad in results) == 0
    # Floor a little under today's 482 (json_repair alone: 463): catches a ladder regression.
    assert sum(ok for ok, _ in results) >= 475
