"""Run benchmarks and assemble BENCHMARKS.md from bench/results/*.md.

`bench/results/NAME.md` is what `python -m bench NAME` printed last: each run replaces
it. BENCHMARKS.md holds the current figures only, each section with the command that
produced it. `bench/results/NAME-history.md`, where there is one, is kept by hand
(before/after figures, stop by stop); BENCHMARKS.md links to it and no run writes it."""

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
    "cache_memory",
    "chains",
    "local_servers",  # needs live servers: without them it keeps the recorded figures
]


def command(name: str) -> str:
    """The command that rewrites one section."""
    return f"`.venv/bin/python -m bench {name}`"


def _with_command(name: str, section: str) -> str:
    """The section with its command on the line after its heading, unless it names it."""
    if f"-m bench {name}`" in section or f"-m bench {name} " in section:
        return section.strip() + "\n"
    heading, _, body = section.strip().partition("\n")
    return f"{heading}\n\nCommand: {command(name)} (also run by `make bench`).\n{body}\n"


def assemble() -> None:
    sections = [
        "# Benchmarks\n",
        "The current figures, produced by `make bench` (or the command under each section "
        "for one of them). "
        f"Machine: {platform.machine()}, Python {platform.python_version()}. "
        "These machines are noisy: read ratios and medians, not absolute times.\n",
    ]
    histories: list[str] = []
    for name in BENCHMARKS:
        path = RESULTS / f"{name}.md"
        if path.is_file():
            sections.append(_with_command(name, path.read_text(encoding="utf-8")))
        if (RESULTS / f"{name}-history.md").is_file():
            histories.append(f"- `{name}`: [bench/results/{name}-history.md]"
                             f"(bench/results/{name}-history.md)")  # fmt: skip
    if histories:
        sections.append(
            "## History\n\nEarlier figures, before and after each change, kept by hand "
            "(no run writes them):\n\n" + "\n".join(histories) + "\n"
        )
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
