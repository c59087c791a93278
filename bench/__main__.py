"""Run benchmarks and assemble BENCHMARKS.md from bench/results/*.md.

`bench/results/NAME.md` is what `python -m bench NAME` printed last: each run replaces
it. `bench/results/NAME-history.md`, where there is one, is kept by hand (before/after
figures, stop by stop) and follows it in BENCHMARKS.md; no run writes it."""

from __future__ import annotations

import importlib
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

# Order of sections in BENCHMARKS.md.
BENCHMARKS = [
    "startup",
    "parse_ladder",
    "extraction",
    "fetch_concurrency",
    "ranking",
    "citations",
    "orchestration",
    "latency",
    "lean",
    "team",
    "stopping",
    "chains",
    "local_servers",  # needs live servers: without them it keeps the recorded figures
]


def assemble() -> None:
    sections = [
        "# Benchmarks\n",
        "Produced by `make bench` (or `python -m bench NAME` for one section). "
        f"Machine: {platform.machine()}, Python {platform.python_version()}. "
        "These machines are noisy: read ratios and medians, not absolute times.\n",
    ]
    for name in BENCHMARKS:
        for path in (RESULTS / f"{name}.md", RESULTS / f"{name}-history.md"):
            if path.is_file():
                sections.append(path.read_text(encoding="utf-8").strip() + "\n")
    (ROOT / "BENCHMARKS.md").write_text("\n".join(sections), encoding="utf-8")


def main(argv: list[str]) -> int:
    names = argv or BENCHMARKS
    RESULTS.mkdir(parents=True, exist_ok=True)
    for name in names:
        if name not in BENCHMARKS:
            print(f"unknown benchmark {name!r}; choose from {BENCHMARKS}", file=sys.stderr)
            return 2
        started = time.perf_counter()
        print(f"== {name}", file=sys.stderr, flush=True)
        module = importlib.import_module(f"bench.{name}")
        section = module.run()
        (RESULTS / f"{name}.md").write_text(section.strip() + "\n", encoding="utf-8")
        print(f"   done in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    assemble()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
