"""CPU and idle time per run (issue 21): the latency benchmark's questions, one at a
time, each in a fresh `deepsearch` process, quiet and with CPU-bound processes beside
it. Per run: wall time, the union of the LLM calls' latency, the overhead ratio
(wall / that union), the process's CPU time (user + system, from its own wait4
rusage), its exit tail (the answer's last stdout bytes to the process's exit) and the
pages fetched against the pages read.

Reproduce: `.venv/bin/python -m bench lean` (BENCH_LEAN_RUNS=n runs each question n
times, default 1; BENCH_LEAN_HOGS=n sets the CPU-bound processes of the loaded pass,
default 2; BENCH_SOURCE=/path/to/a/checkout measures that checkout's code instead).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bench.latency import DATA, QUESTIONS, Bench, Figures, two_hop_items
from bench.latency_measure import union_s
from bench.latency_policy import Item

TARGET_CPU_S = 1.2
TARGET_TAIL_S = 0.1
TARGET_UNREAD = 0.10
TARGET_QUIET = 1.2
TARGET_LOADED = 1.5
_HOG = "while True: pass"


def llm_union_s(f: Figures) -> float:
    return union_s([w for w in f.waits if w.kind == "llm"])


def overhead(f: Figures) -> float:
    """The issue's ratio: wall time over the union of the LLM calls' latency."""
    llm = llm_union_s(f)
    return f.wall_s / llm if llm else float("nan")


@contextmanager
def hogs(n: int) -> Iterator[list[float]]:
    """`n` CPU-bound processes beside the measurement, stopped (by pid) after it. The
    list yielded gets the CPU seconds they used (their wait4 rusage): the evidence that
    the pass was loaded, which a trailing load average is not."""
    procs = [subprocess.Popen([sys.executable, "-c", _HOG]) for _ in range(n)]
    used: list[float] = []
    try:
        yield used
    finally:
        for proc in procs:
            proc.kill()
            _, _, usage = os.wait4(proc.pid, 0)
            proc.returncode = -9
            used.append(usage.ru_utime + usage.ru_stime)


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f}/{five:.1f}"


Rows = list[tuple[Figures, str]]  # a run's figures and the load average after it


def sources() -> dict[str, str | None]:
    """The code to measure, by label: BENCH_SOURCES="before=/a,after=/b" alternates
    checkouts question by question (fair under a changing load); else this checkout."""
    spec = os.environ.get("BENCH_SOURCES", "")
    pairs = [part.split("=", 1) for part in spec.split(",") if "=" in part]
    if pairs:
        return {label.strip(): path.strip() for label, path in pairs}
    return {"this checkout": os.environ.get("BENCH_SOURCE") or None}


def measure_pass(
    bench: Bench, items: list[Item], runs: int, label: str, codes: dict[str, str | None]
) -> dict[str, Rows]:
    """Each question `runs` times on each code in turn, one process at a time."""
    rows: dict[str, Rows] = {name: [] for name in codes}
    for item in items:
        for _ in range(runs):
            for name, source in codes.items():
                bench.source = source
                figures = bench.run(item)
                rows[name].append((figures, _load()))
                print(f"   {label} {name:8} {_line(figures)} load {_load()}", file=sys.stderr)
    return rows


FLOOR = "import os, sys; sys.stdout.write('{}'); sys.stdout.flush(); os._exit(0)"


def tail_floor(runs: int = 5) -> float:
    """The exit tail this instrument measures on a process that exits right after its
    write (scheduling and pipe latency at the current load): the floor of the figure."""
    from bench.latency import run_child

    tails = [
        run_child([sys.executable, "-c", FLOOR], env=dict(os.environ), cwd=".").exit_tail_s
        for _ in range(runs)
    ]
    return _median(tails)


PROBE = """
import resource, statistics
from deepsearch.sandbox.runner import probe_isolation
def used():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
cpu = []
for _ in range({runs}):
    before = used()
    probe_isolation("auto")
    cpu.append(used() - before)
print(statistics.median(cpu))
"""


def probe_cpu(source: str | None, runs: int = 3) -> float:
    """The CPU of the processes one sandbox probe starts (every run starts one, beside its
    first step), median of `runs` in a fresh interpreter of that code: a figure the run's
    CPU holds but its own profile does not show (it is other processes' time)."""
    env = {**os.environ, **({"PYTHONPATH": source} if source else {})}
    command = [sys.executable, "-c", PROBE.format(runs=runs)]
    # In the code's own folder: `python -c` puts the working directory first on sys.path.
    done = subprocess.run(command, env=env, cwd=source, capture_output=True, text=True, timeout=120)
    try:
        return float(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return float("nan")


def warm_up(bench: Bench, item: Item, codes: dict[str, str | None]) -> None:
    """One unmeasured run per code: its bytecode is written, as an install's is."""
    for source in codes.values():
        bench.source = source
        bench.run(item)


def _line(f: Figures) -> str:
    return (
        f"{f.status:9} ok={f.correct!s:5} wall {f.wall_s:5.2f} llm {llm_union_s(f):5.2f} "
        f"x{overhead(f):.2f} cpu {f.cpu_s:4.2f} tail {f.exit_tail_s:4.2f} "
        f"pages {f.pages} unread {f.unread}"
    )


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _table(rows: list[tuple[Figures, str]]) -> str:
    head = (
        "| # | question | correct | wall s | LLM union s | overhead | CPU s | exit tail s "
        "| pages fetched | read | fetched, not read | load (1/5 min) |\n"
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    )
    lines = [head]
    for n, (f, load) in enumerate(rows, start=1):
        q = f.question if len(f.question) <= 40 else f.question[:37] + "…"
        lines.append(
            f"| {n} | {q} | {'yes' if f.correct else '**no**'} | {f.wall_s:.2f} | "
            f"{llm_union_s(f):.2f} | {overhead(f):.2f} | {f.cpu_s:.2f} | {f.exit_tail_s:.2f} | "
            f"{f.pages} | {f.read} | {f.unread} | {load} |"
        )
    figs = [f for f, _ in rows]

    def med(fn: Callable[[Figures], float]) -> float:
        return _median([fn(f) for f in figs])

    fetched = sum(f.pages for f in figs)
    unread = sum(f.unread for f in figs)
    lines.append(
        f"| | **median** | **{sum(f.correct for f in figs)}/{len(figs)}** | "
        f"{med(lambda f: f.wall_s):.2f} | {med(llm_union_s):.2f} | **{med(overhead):.2f}** | "
        f"**{med(lambda f: f.cpu_s):.2f}** | **{med(lambda f: f.exit_tail_s):.2f}** | "
        f"{fetched} (all) | {sum(f.read for f in figs)} (all) | "
        f"**{unread} = {unread / max(1, fetched):.0%}** | |"
    )
    return "\n".join(lines)


def summary(rows: list[tuple[Figures, str]], target_ratio: float) -> dict[str, float]:
    figs = [f for f, _ in rows]
    fetched = sum(f.pages for f in figs)
    return {
        "correct": sum(f.correct for f in figs) / max(1, len(figs)),
        "overhead": _median([overhead(f) for f in figs]),
        "cpu": _median([f.cpu_s for f in figs]),
        "tail": _median([f.exit_tail_s for f in figs]),
        "unread": sum(f.unread for f in figs) / max(1, fetched),
        "target": target_ratio,
    }


def _verdicts(quiet: dict[str, float], loaded: dict[str, float]) -> str:
    def v(ok: bool) -> str:
        return "met" if ok else "**not met**"

    return "\n".join(
        [
            "| target (issue 21) | quiet | loaded | verdict |",
            "|---|---:|---:|---|",
            f"| median CPU ≤ {TARGET_CPU_S} s | {quiet['cpu']:.2f} | {loaded['cpu']:.2f} "
            f"| {v(quiet['cpu'] <= TARGET_CPU_S)} (quiet) |",
            f"| median exit tail ≤ {TARGET_TAIL_S} s | {quiet['tail']:.2f} | "
            f"{loaded['tail']:.2f} | {v(quiet['tail'] <= TARGET_TAIL_S)} (quiet) |",
            f"| fetched, not read ≤ {TARGET_UNREAD:.0%} | {quiet['unread']:.0%} | "
            f"{loaded['unread']:.0%} | {v(quiet['unread'] <= TARGET_UNREAD)} (quiet) |",
            f"| median overhead ≤ {TARGET_QUIET} quiet, ≤ {TARGET_LOADED} loaded | "
            f"{quiet['overhead']:.2f} | {loaded['overhead']:.2f} | "
            f"{v(quiet['overhead'] <= TARGET_QUIET)} / {v(loaded['overhead'] <= TARGET_LOADED)} |",
        ]
    )


def run() -> str:
    if not DATA.is_dir():
        return "## CPU and idle time per run\n\nSkipped: ../shared/data/hotpotqa100 is absent.\n"
    items, site = two_hop_items(DATA, QUESTIONS)
    items = items[: int(os.environ.get("BENCH_LEAN_QUESTIONS", str(QUESTIONS)))]
    runs = int(os.environ.get("BENCH_LEAN_RUNS", "1"))
    n_hogs = int(os.environ.get("BENCH_LEAN_HOGS", "2"))
    codes = sources()
    from deepsearch.llm.tokens import get_encoding

    get_encoding()  # the fake LLM counts tokens: load the vocabulary outside the runs
    with Bench(site) as bench:
        warm_up(bench, items[0], codes)
        load_before = _load()
        quiet = measure_pass(bench, items, runs, "quiet ", codes)
        floors = [tail_floor()]
        started = time.perf_counter()
        with hogs(n_hogs) as hog_cpu:
            loaded = measure_pass(bench, items, runs, "loaded", codes)
            floors.append(tail_floor())
        cores = sum(hog_cpu) / (time.perf_counter() - started)
    probes = {name: probe_cpu(source) for name, source in codes.items()}
    return render(
        quiet, loaded, n_hogs=n_hogs, runs=runs, load=load_before, codes=codes, floors=floors,
        hog_cores=cores, probes=probes,
    )  # fmt: skip


def _probe_line(probes: dict[str, float]) -> str:
    if not probes:
        return ""
    each = ", ".join(f"{name} {cpu:.3f} s" for name, cpu in probes.items())
    return (
        " The sandbox probe alone (the CPU of the processes it starts, in the run's CPU "
        f"above; median of 3 probes in a fresh interpreter of each code): {each}."
    )


def render(
    quiet: dict[str, Rows],
    loaded: dict[str, Rows],
    *,
    n_hogs: int,
    runs: int,
    load: str,
    codes: dict[str, str | None],
    floors: list[float],
    hog_cores: float = float("nan"),
    probes: dict[str, float] | None = None,
) -> str:
    questions = len(next(iter(quiet.values()))) // max(1, runs)
    named = ", ".join(f"{k}: `{v or 'this checkout'}`" for k, v in codes.items())
    parts = [
        f"""## CPU and idle time per run

Command: `.venv/bin/python -m bench lean` (bench/lean.py). The latency benchmark's first
{questions} two-hop questions and fakes (section "Wall time at real latency"), each
question {runs}× one at a time in a fresh process, after one unmeasured warm-up run (its
bytecode written, as an install's is); first quiet (whatever else runs on the machine:
see the load column), then with {n_hogs} CPU-bound processes (`python -c "{_HOG}"`)
beside it (they kept {hog_cores:.2f} of the machine's cores busy over the loaded pass, by
their own CPU time; the load column trails by a minute). Overhead = wall time / the union of the LLM calls' latency (the issue's
ratio). CPU = user + system time of the deepsearch process alone (`os.wait4` rusage).
Exit tail = the answer's last bytes on stdout to the process's exit. Fetched, not read =
page requests that served no page of the run's `read_urls` (a second fetch of a page
read counts too). Code measured ({named}), alternated question by question. Load
average (1/5 min) before the first run: {load}. The exit tail this instrument reads on a
process that exits right after its write (its floor: scheduling and pipe latency):
{floors[0]:.2f} s quiet, {floors[1]:.2f} s loaded.{_probe_line(probes or {})}
"""
    ]
    for name in codes:
        parts += [
            f"### {name}: quiet\n\n{_table(quiet[name])}\n",
            f"### {name}: {n_hogs} CPU-bound processes beside it\n\n{_table(loaded[name])}\n",
            f"### {name}: against the targets\n\n"
            + _verdicts(summary(quiet[name], TARGET_QUIET), summary(loaded[name], TARGET_LOADED))
            + "\n",
        ]
    return "\n".join(parts)
