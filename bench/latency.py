"""Wall time at real latency: whole questions through the real CLI, against loopback
fakes with API-like latency (issue 8, item 7).

Each question runs alone, as `deepsearch "<question>" --json` in a fresh process (so
start-up counts), with the real `openai` SDK, against:
- a policy LLM (bench/latency_policy.py) behind an OpenAI-compatible server:
  600 ms to the first token + 8 ms per output token;
- a SearXNG API over the HotpotQA-100 paragraphs: 400–900 ms per search;
- the paragraphs as link-dense article pages (~120 in-site links, a navbox, a
  cookie banner) on one site: 100–900 ms per page.
Delays are pseudo-random but fixed per query / page, so runs are comparable.
Definitions of the critical path are in bench/latency_measure.py.

Reproduce: `.venv/bin/python -m bench latency`
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.latency_measure import llm_rounds, total_composition, union_s, unread_fetches
from bench.latency_policy import Item, Policy, contains_answer
from bench.latency_servers import FakeArticleSite, FakeLLMServer, FakeSearxng, Timeline, Wait
from bench.latency_site import Site

# ../shared/data beside the checkout; from a worktree in /work/wt/<name>, one level up.
_ROOTS = Path(__file__).resolve().parents[2:4]
DATA = next(
    (d for r in _ROOTS if (d := r / "shared" / "data" / "hotpotqa100").is_dir()),
    _ROOTS[0] / "shared" / "data" / "hotpotqa100",
)
QUESTIONS = 10
MAX_STEPS = 12  # a 2-hop run needs ~4 steps; the cap only bounds a lost run
# A good run takes ~15 s; this bounds a hung one (BENCH_RUN_TIMEOUT: a loaded machine).
RUN_TIMEOUT_S = float(os.environ.get("BENCH_RUN_TIMEOUT", "90"))


@dataclass
class Figures:
    question: str
    status: str
    correct: bool
    wall_s: float
    critical_s: float
    llm_s: float  # the part of the critical path with an LLM call pending
    cpu_s: float  # user + system CPU time of the deepsearch process (less load-sensitive)
    startup_s: float  # process start to the first outside call
    llm_calls: int
    llm_rounds: int
    tokens: int
    searches: int
    pages: int
    exit_tail_s: float = 0.0  # the answer written (last stdout bytes) to the process gone
    read: int = 0  # pages the run read (its `read_urls`)
    unread: int = 0  # page requests that served no page the run read
    read_urls: list[str] = field(default_factory=list, repr=False)
    actions: list[str] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list, repr=False)
    agent_prompts: list[str] = field(default_factory=list, repr=False)  # as the LLM got them

    @property
    def overhead(self) -> float:
        return self.wall_s / self.critical_s if self.critical_s else float("nan")


@dataclass
class Bench:
    """The three fake servers, the policy and the shared timeline."""

    site: Site
    scale: float = 1.0
    timeline: Timeline = field(default_factory=Timeline)
    policy: Policy = field(default_factory=Policy)
    stack: ExitStack = field(default_factory=ExitStack)
    # Another checkout's code to run (its folder goes on PYTHONPATH); None: this one.
    source: str | None = field(default_factory=lambda: os.environ.get("BENCH_SOURCE") or None)

    def __enter__(self) -> Bench:
        kw = {"scale": self.scale}
        self.pages = self.stack.enter_context(FakeArticleSite(self.timeline, self.site, **kw))
        self.search = self.stack.enter_context(
            FakeSearxng(self.timeline, self.site, self.pages.url, **kw)
        )
        self.llm = self.stack.enter_context(FakeLLMServer(self.timeline, self.policy, **kw))
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def command(self, question: str) -> list[str]:
        script = Path(sys.executable).parent / "deepsearch"
        head = [str(script)] if script.exists() else [sys.executable, "-m", "deepsearch"]
        if self.source:  # another checkout's code (on PYTHONPATH: _env)
            head = [sys.executable, "-m", "deepsearch"]
        return [
            *head,
            question,
            "--json",
            "--quiet",
            "--llm-provider",
            "openai",
            "--search-provider",
            "searxng",
            "--searxng-url",
            self.search.url,
            "--allow-private-urls",
            "--no-cache",
            "--max-steps",
            str(MAX_STEPS),
        ]

    def run(self, item: Item) -> Figures:
        self.policy.item = item
        self.policy.agent_prompts = []
        self.timeline.take()
        with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
            env = _env(self.llm.base_url, Path(tmp), self.source)
            child = run_child(self.command(item.question), env=env, cwd=tmp)
        out = _parse(child.stdout, child.stderr) if not child.killed else {}
        if child.killed:
            out = {"status": f"killed after {RUN_TIMEOUT_S:.0f} s"}
        figures = _figures(item, out, child.wall_s, child.started, self.timeline.take())
        figures.cpu_s = child.cpu_s
        figures.exit_tail_s = child.exit_tail_s
        figures.read_urls = [str(u) for u in out.get("read_urls") or []]
        figures.read = len(figures.read_urls)
        figures.unread = unread_fetches(figures.waits, figures.read_urls)
        figures.agent_prompts = self.policy.agent_prompts
        return figures


@dataclass
class Child:
    stdout: str
    stderr: str
    started: float
    wall_s: float
    cpu_s: float  # user + system of this child alone (its wait4 rusage)
    exit_tail_s: float  # the last stdout bytes to the process's exit
    killed: bool = False


def run_child(command: list[str], *, env: dict[str, str], cwd: str) -> Child:
    """Run one process to its end: its own CPU time (wait4's rusage, so other children
    of the bench do not count) and its exit tail (the time from its last stdout bytes,
    the answer, to its exit as wait4 sees it)."""
    import threading

    started = time.perf_counter()
    proc = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}
    last_out = [started]

    def pump(name: str, stream: Any) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            if name == "out":
                last_out[0] = time.perf_counter()
            chunks[name].append(chunk)

    pumps = [
        threading.Thread(target=pump, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=pump, args=("err", proc.stderr), daemon=True),
    ]
    for thread in pumps:
        thread.start()
    killer = threading.Timer(RUN_TIMEOUT_S, proc.kill)
    killer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    ended = time.perf_counter()
    killer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for thread in pumps:
        thread.join()
    return Child(
        stdout=b"".join(chunks["out"]).decode("utf-8", "replace"),
        stderr=b"".join(chunks["err"]).decode("utf-8", "replace"),
        started=started,
        wall_s=ended - started,
        cpu_s=usage.ru_utime + usage.ru_stime,
        # A pump thread scheduled late (a loaded machine) stamps the last bytes after
        # the exit wait4 saw: the tail was shorter than the pump's delay, so read 0.
        exit_tail_s=max(0.0, ended - last_out[0]) if chunks["out"] else float("nan"),
        killed=proc.returncode == -9,
    )


def _env(base_url: str, home: Path, source: str | None = None) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEARCH_", "OPENAI_"))}
    # An installed deepsearch runs from its bytecode: never recompile every module per run.
    keep.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in ("GEMINI_API_KEY", "JINA_API_KEY", "BRAVE_API_KEY", "SERPER_API_KEY"):
        keep.pop(key, None)
    for key in list(keep):  # loopback only: no proxy in the way
        if key.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            keep.pop(key)
    return {
        **keep,
        "OPENAI_API_KEY": "sk-bench-placeholder",
        "OPENAI_BASE_URL": base_url,
        "HOME": str(home),
        "DEEPSEARCH_CACHE_DIR": str(home / "cache"),
        "NO_COLOR": "1",
        **({"PYTHONPATH": source} if source else {}),
    }


def _parse(stdout: str, stderr: str) -> dict[str, Any]:
    try:
        out = json.loads(stdout)
    except ValueError:
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": f"no JSON ({last[:80]})"}
    return out if isinstance(out, dict) else {"status": "no JSON object"}


def _figures(
    item: Item, out: dict[str, Any], wall: float, started: float, waits: list[Wait]
) -> Figures:
    usage = out.get("usage") or {}
    status = str(out.get("status", "?"))
    answer = str(out.get("answer") or "")
    return Figures(
        question=item.question,
        status=status,
        correct=status == "answered" and contains_answer(answer, item.answer),
        wall_s=wall,
        critical_s=union_s(waits),
        llm_s=union_s([w for w in waits if w.kind == "llm"]),
        cpu_s=0.0,
        startup_s=(waits[0].start - started) if waits else wall,
        llm_calls=sum(w.kind == "llm" for w in waits),
        llm_rounds=llm_rounds(waits),
        tokens=int(usage.get("total_tokens") or 0),
        searches=sum(w.kind == "search" for w in waits),
        pages=sum(w.kind == "page" for w in waits),
        actions=[str(s.get("action")) for s in out.get("steps") or []],
        waits=waits,
    )


def two_hop_items(data: Path, n: int) -> tuple[list[Item], Site]:
    """The first n questions with exactly two distinct gold pages, both in the corpus."""
    questions = json.loads((data / "hotpotqa_train.json").read_text("utf-8"))
    corpus = json.loads((data / "hotpotqa_train_corpus.json").read_text("utf-8"))
    items = [Item.from_hotpot(q, corpus) for q in questions]
    chosen = [i for i in items if len(i.gold) == 2 and all(t in corpus for t in i.gold)]
    return chosen[:n], Site.from_corpus(corpus)


def measure(items: list[Item], site: Site, scale: float = 1.0, runs: int = 1) -> list[Figures]:
    """Each question `runs` times, keeping its fastest run (the least disturbed by
    other work on the machine)."""
    from deepsearch.llm.tokens import get_encoding

    get_encoding()  # the fake LLM counts tokens: load the vocabulary outside the runs
    with Bench(site, scale=scale) as bench:
        rows = []
        for item in items:
            tries = [bench.run(item) for _ in range(max(1, runs))]
            rows.append(min(tries, key=lambda f: f.wall_s))
            print(f"   {_row_line(rows[-1])}", file=sys.stderr, flush=True)
        return rows


def _row_line(f: Figures) -> str:
    return (
        f"{f.status:9} correct={f.correct!s:5} wall {f.wall_s:5.1f}s crit {f.critical_s:5.1f}s "
        f"x{f.overhead:.2f} llm {f.llm_rounds}/{f.llm_calls} tok {f.tokens} {f.actions}"
    )


def run() -> str:
    if not DATA.is_dir():
        return (
            "## Wall time at real latency\n\nSkipped: ../shared/data/hotpotqa100 is not present.\n"
        )
    items, site = two_hop_items(DATA, QUESTIONS)
    runs = int(os.environ.get("BENCH_LATENCY_RUNS", "1"))
    rows = measure(items, site, runs=runs)
    from bench.latency_report import render

    prompts = [p for f in rows for p in f.agent_prompts]
    # The prompts an answer can be written from: those that already show a read page.
    with_pages = [p for p in prompts if "<knowledge-" in p and 'type="url"' in p]
    return render(
        rows,
        total_composition(prompts),
        len(prompts),
        _load(),
        runs=runs,
        read_parts=total_composition(with_pages),
        read_requests=len(with_pages),
    )


def _load() -> str:
    """The machine's load while measuring: overhead is CPU time, so it matters."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "unknown."
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores."


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
