"""bench/__main__.py and the lean benchmark's load: a run rewrites its own result and
never the hand-kept history beside it, which BENCHMARKS.md links to (it shows the current
figures, each with its command); the loaded pass proves it was loaded."""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

import pytest

from bench import __main__ as bench_main
from bench.lean import hogs


def test_a_run_rewrites_its_result_and_never_its_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "bench" / "results"
    results.mkdir(parents=True)
    (results / "fake.md").write_text("## Fake\n\nlast run\n", "utf-8")
    history = "## Fake: the history\n\nthe figures of old\n"
    (results / "fake-history.md").write_text(history, "utf-8")
    module = types.ModuleType("bench.fake")
    module.run = lambda: "## Fake\n\nthis run\n"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bench.fake", module)
    monkeypatch.setattr(bench_main, "ROOT", tmp_path)
    monkeypatch.setattr(bench_main, "RESULTS", results)
    monkeypatch.setattr(bench_main, "BENCHMARKS", ["fake"])

    assert bench_main.main(["fake"]) == 0

    assert (results / "fake.md").read_text("utf-8") == "## Fake\n\nthis run\n"
    assert (results / "fake-history.md").read_text("utf-8") == history
    assembled = (tmp_path / "BENCHMARKS.md").read_text("utf-8")
    assert "last run" not in assembled
    # The current figures with their command; the history linked, never copied in.
    assert "## Fake\n\nCommand: `.venv/bin/python -m bench fake`" in assembled
    assert "the figures of old" not in assembled
    assert "[bench/results/fake-history.md](bench/results/fake-history.md)" in assembled


def test_the_cpu_bound_processes_report_the_cpu_they_used() -> None:
    with hogs(2) as used:
        threading.Event().wait(0.01)  # a moment: any CPU they used shows (each costs the suite)
        assert used == []  # filled once they are stopped
    assert len(used) == 2 and all(seconds > 0 for seconds in used)
