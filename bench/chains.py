"""Research that follows the chain (issue 32): multi-hop questions whose later hops
share at most one content word with the question.

In process: the real loop, LLM client (token accounting, budget checks) and reader
over loopback HTTP, on link-dense wiki pages (~150 links each: menu, inline links,
"See also", a 120-link navbox, footer) with distractor pages in the question's words
(tests/fakes/chains.py). The model is `ChainModel`, a weak model that never
reflects: it answers once every hop's page has been in its prompt, reads the next
hop's page when the URL list offers it, searches for the next hop's name, and when
stuck reads what is listed, rephrases and runs the same program. The evaluator
passes only the right year. Sets:

- answerable: 2- to 5-hop chains; for odd seeds the question's search also finds the
  third hop's page (read out of order, as the issue saw);
- link-only: no search finds the last hop's page; the page of the hop before links to
  it inline (its title as the anchor);
- dead end: a middle hop's page is missing (404) and no search finds it;
- clicks only: the model never searches a name; it reads the next hop's link when the
  URL list shows it (a weak model that only clicks); the third hop's page is found
  early, so its links must be followed without the model having named it;
- effort low: 4- and 5-hop chains with --effort low's budget and limits (10 steps: a
  5-hop chain's last page is read at the last step, Beast Mode must see every hop);
- latency: 4- and 5-hop chains with API-like latency (LATENCY_S a model call,
  SEARCH_S a search), wall time measured, the runs side by side.

Budget 500,000 tokens (the default) unless said, step limit 100 (the default).

Reproduce: `.venv/bin/python -m bench chains`. The `main` figures were measured by
running this same file (with tests/fakes/chains.py) in a checkout of main at 48c24fb.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.config import ReaderConfig
from deepsearch.llm.base import Completion, CompletionRequest
from deepsearch.llm.client import LLMClient
from deepsearch.llm.tracker import TokenTracker
from deepsearch.web.reader import LocalReader
from tests.fakes.chains import ChainModel, chain_world
from tests.fakes.clock import FakeClock
from tests.fakes.dead_end import CountingSandbox
from tests.fakes.scripted_llm import ScriptedProvider, offline_settings
from tests.fakes.web_server import LoopbackServer

BUDGET = 500_000
LOW_BUDGET = 100_000  # --effort low: this budget, 10 steps, no reflect, one attempt
LOW = RunOptions(max_steps=10, max_bad_attempts=1, reflect=False)
SEEDS = 25  # per hop count for the answerable set
LATENCY_S = 0.5
SEARCH_S = 0.3
# name -> [(seed, hops, link_only, dead_end, budget)]; "clicks only": the model never
# searches a name, it follows the links it is shown.
SETS: dict[str, list[tuple[int, int, bool, bool, int]]] = {
    "answerable": [(s, h, False, False, BUDGET) for h in (2, 3, 4, 5) for s in range(SEEDS)],
    "link-only": [(s, h, True, False, BUDGET) for h in (2, 3, 4, 5) for s in range(5)],
    "dead end": [(s, h, False, True, BUDGET) for h in (2, 3, 4, 5) for s in range(4)],
    "clicks only": [(s, h, False, False, BUDGET) for h in (2, 3, 4, 5) for s in range(3)],
    "effort low": [(s, h, False, False, LOW_BUDGET) for h in (4, 5) for s in range(5)],
}
LATENCY_RUNS = [(s, h, False, False, BUDGET) for h in (4, 5) for s in range(4)]

# This bench on main at 48c24fb (before issue 32), same sets:
# set -> (runs, answered, forced, not_found, correct, steps med, steps max,
#         tokens med, tokens max, calls med of answered)
MAIN: dict[str, tuple[float, ...]] = {
    "answerable": (100, 62, 25, 13, 87, 7, 9, 22_354, 27_019, 10),
    "link-only": (20, 0, 0, 20, 0, 11.5, 13, 35_733, 44_503, 0),
    "dead end": (16, 0, 0, 16, 0, 12, 17, 51_885, 70_205, 0),
    "clicks only": (12, 0, 0, 12, 0, 10, 10, 34_595, 35_532, 0),
    "effort low": (10, 0, 5, 5, 5, 9, 9, 24_121, 24_504, 0),
}
MAIN_LATENCY: tuple[float, float, int] | None = (6.3, 6.4, 25_805)  # wall med, max s; tokens
MAIN_LATENCY_ANSWERED = 0
# answerable set, per hop count: (answered, tokens med, LLM calls med) of answered runs
MAIN_BY_HOPS: dict[str, tuple[int, int, float]] = {
    "2": (25, 15_347, 8),
    "3": (25, 21_802, 10),
    "4": (0, 0, 0),
    "4, 3rd early": (12, 22_515, 10),
    "5": (0, 0, 0),
    "5, 3rd early": (0, 0, 0),
}


@dataclass
class Figures:
    name: str
    hops: int
    status: str
    steps: int
    tokens: int
    calls: int
    correct: bool
    stop_reason: str
    wall_s: float
    early: bool = False


class SlowProvider(ScriptedProvider):
    """The scripted model, answering after `latency_s` like an API."""

    def __init__(self, fn: Any, latency_s: float) -> None:
        super().__init__(fn)
        self.latency_s = latency_s

    async def complete(self, request: CompletionRequest) -> Completion:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return await super().complete(request)


async def measure(
    name: str, run: tuple[int, int, bool, bool, int], latency_s: float = 0.0
) -> Figures:
    seed, hops, link_only, dead_end, budget = run
    early = hops >= 4 and (name == "clicks only" or (name == "answerable" and seed % 2 == 1))
    chain = chain_world(seed, hops, link_only=link_only, dead_end=dead_end, early=early)
    provider = SlowProvider(ChainModel(chain, clicks_only=name == "clicks only"), latency_s)
    llm = LLMClient(
        provider=provider,
        provider_name="openai",
        settings=offline_settings(),
        tracker=TokenTracker(budget),
    )
    from deepsearch.agent.loop import ResearchRun

    started = time.perf_counter()
    with LoopbackServer(routes=chain.routes()) as wiki:
        reader = LocalReader(ReaderConfig(allow_private_urls=True), clock=FakeClock())
        try:
            deps = AgentDeps(
                llm=llm,
                search=chain.engine(wiki, delay_s=SEARCH_S if latency_s else 0.0),
                reader=reader,
                clock=FakeClock(),
                sandbox=CountingSandbox(),
            )
            options = LOW if budget == LOW_BUDGET else RunOptions()
            result = await ResearchRun(chain.question, deps, options).run()
        finally:
            await reader.aclose()
    return Figures(
        name=name,
        hops=hops,
        status=result.status,
        steps=len(result.steps),
        tokens=result.usage.total_tokens,
        calls=len(provider.calls),
        correct=chain.gold in result.answer and result.status != "not_found",
        stop_reason=str(result.stop_reason or result.error or ""),
        wall_s=time.perf_counter() - started,
        early=early,
    )


def summary(runs: list[Figures]) -> tuple[Any, ...]:
    status = Counter(f.status for f in runs)
    steps, tokens = [f.steps for f in runs], [f.tokens for f in runs]
    calls = [f.calls for f in runs if f.status == "answered"] or [0]
    return (
        len(runs),
        status["answered"],
        status["forced"],
        status["not_found"],
        sum(f.correct for f in runs),
        statistics.median(steps),
        max(steps),
        int(statistics.median(tokens)),
        max(tokens),
        statistics.median(calls),
    )


def by_hops(runs: list[Figures]) -> dict[str, tuple[int, int, float]]:
    """Per hop count and order (the third hop found early or not): answered runs, and
    their median tokens and LLM calls."""
    out = {}
    for hops, early in sorted({(f.hops, f.early) for f in runs}):
        done = [f for f in runs if (f.hops, f.early) == (hops, early) and f.status == "answered"]
        tokens = int(statistics.median(f.tokens for f in done)) if done else 0
        calls = statistics.median(f.calls for f in done) if done else 0
        out[f"{hops}{', 3rd early' if early else ''}"] = (len(done), tokens, calls)
    return out


def _hop_cell(row: tuple[int, int, float] | None) -> str:
    if row is None:
        return "—"
    answered, tokens, calls = row
    return f"{answered}: {tokens:,} tokens, {calls:g} calls" if answered else "0"


def _row(name: str, row: tuple[Any, ...], code: str) -> str:
    n, ans, forced, nf, ok, s_med, s_max, t_med, t_max, c_med = row
    return (
        f"| {name} | {code} | {n} | {ans} | {forced} | {nf} | {ok} | {s_med:g} / {s_max} | "
        f"{t_med:,} / {t_max:,} | {c_med:g} |"
    )


def render(results: dict[str, list[Figures]], latency: list[Figures]) -> str:
    lines = [
        "## Research that follows the chain (issue 32)",
        "",
        "Command: `python -m bench chains` (bench/chains.py). In process: the real loop, LLM "
        "client and reader over loopback HTTP, on link-dense wiki pages (~150 links each) "
        "with distractor pages in the question's words; later hops share at most one content "
        "word with the question (tests/fakes/chains.py). The model never reflects and answers "
        "once every hop's page has been in its prompt; only the right year passes the "
        f"evaluator. Budget {BUDGET:,} tokens (effort low: {LOW_BUDGET:,}, 10 steps). `main`: the same "
        "bench on main at 48c24fb.",
        "",
        "| set | code | runs | answered | forced | not found | correct | steps med / max "
        "| tokens med / max | LLM calls med (answered) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, runs in results.items():
        if name in MAIN:
            lines.append(_row(name, MAIN[name], "main"))
        lines.append(_row(name, summary(runs), "this"))
    lines += [
        "",
        f"Answered runs of the answerable set by hops (of {SEEDS} runs, split where the "
        "third hop is found early or not; tokens and LLM calls, medians):",
        "",
        "| hops | main | this |",
        "|---:|---|---|",
    ]
    for hops, row in by_hops(results.get("answerable", [])).items():
        lines.append(f"| {hops} | {_hop_cell(MAIN_BY_HOPS.get(hops))} | {_hop_cell(row)} |")
    lines += ["", "Why research ended (this code):", ""]
    for name, runs in results.items():
        reasons = Counter(f.stop_reason[:60] for f in runs).most_common(3)
        lines.append(f"- {name}: " + "; ".join(f"{r} ×{n}" for r, n in reasons))
    dead = results.get("dead end", [])
    if dead:
        worst_steps = max(f.steps for f in dead)
        worst_share = max(f.tokens for f in dead) / BUDGET
        lines.append(
            f"- dead ends: at most {worst_steps} steps and {worst_share:.0%} of the budget "
            "(limit: 20 steps, 25%)"
        )
    if latency:
        walls = [f.wall_s for f in latency]
        tokens = int(statistics.median(f.tokens for f in latency))
        line = (
            f"- latency ({LATENCY_S} s a model call, {SEARCH_S} s a search; {len(latency)} 4- and "
            f"5-hop chains): wall median {statistics.median(walls):.1f} s, max {max(walls):.1f} s, "
            f"tokens median {tokens:,}; answered {sum(f.status == 'answered' for f in latency)}"
            f"/{len(latency)}"
        )
        if MAIN_LATENCY is not None:
            w_med, w_max, t_med = MAIN_LATENCY
            line += (
                f" (main: wall median {w_med:.1f} s, max {w_max:.1f} s, tokens median "
                f"{t_med:,}; answered {MAIN_LATENCY_ANSWERED}/{len(latency)}: the others "
                "stopped for no new evidence)"
            )
        lines.append(line)
    return "\n".join(lines)


async def _all() -> tuple[dict[str, list[Figures]], list[Figures]]:
    results = {name: [await measure(name, run) for run in runs] for name, runs in SETS.items()}
    latency = list(
        await asyncio.gather(*(measure("latency", run, LATENCY_S) for run in LATENCY_RUNS))
    )
    return results, latency


def run() -> str:
    return render(*asyncio.run(_all()))


if __name__ == "__main__":
    print(run())
