"""The lean report names each code's sandbox probe CPU: a run's CPU holds the processes
the probe starts, which no profile of the run shows (a stop once read 0.51 -> 0.58 s a
run as unattributed while the probe alone had gone 0.018 -> 0.070 s)."""

from __future__ import annotations

from bench.lean import _probe_line


def test_each_code_s_probe_cpu_is_in_the_report() -> None:
    line = _probe_line({"before": 0.0182, "after": 0.0702})
    assert line.endswith("before 0.018 s, after 0.070 s.")
    assert "sandbox probe" in line


def test_no_probe_figures_no_sentence() -> None:
    assert _probe_line({}) == ""
