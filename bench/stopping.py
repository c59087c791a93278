"""What a miss costs: tokens and steps of answered against not-found runs (issue 18).

In process: the real ResearchRun, LLM client (token accounting, budget checks), real
reader over loopback HTTP, on the link-dense wiki of tests/agent/test_multihop_e2e.py
with readable off-topic navbox pages (tests/fakes/dead_end.py). The LLM is scripted:
`PersistentModel` acts on its prompt (search, read, search for the name the page
gave, read, answer) and, when stuck, keeps busy as the issue saw real runs do
(rephrased queries, navbox pages, the same program, the same sub-question). The
evaluator passes only the right year. Worlds:

- answerable: the 2-hop question as the multi-hop test has it; with a detour of 0
  or 4 idle moves after the first search (a slow start must not lose the answer);
- unanswerable: the last hop's page is missing from search and answers 404;
- unreadable: the answerable world without --allow-private-urls (every read refused
  by the address guard).

Budget 500,000 tokens (the default, effort medium), step limit 100 (the default).

Reproduce: `.venv/bin/python -m bench stopping`
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.config import ReaderConfig
from deepsearch.web.reader import LocalReader
from tests.fakes import dead_end
from tests.fakes.clock import FakeClock
from tests.fakes.scripted_llm import scripted_client
from tests.fakes.web_server import LoopbackServer

BUDGET = 500_000
# (world, detour, allow private URLs) per run.
RUNS = [
    ("answerable", 0, True),
    ("answerable", 4, True),
    ("unanswerable", 0, True),
    ("unanswerable", 4, True),
    ("unreadable", 0, False),
]
# Measured with this bench at commit b088bf1, before issue 18 (progress by counts):
# (world, detour, status, exit, steps, tokens).
BEFORE = [
    ("answerable", 0, "answered", 0, 5, 9_778),
    ("answerable", 4, "answered", 0, 9, 17_044),
    ("unanswerable", 0, "not_found", 4, 89, 428_074),
    ("unanswerable", 4, "not_found", 4, 91, 425_620),
    ("unreadable", 0, "not_found", 4, 101, 227_203),
]


@dataclass
class Figures:
    world: str
    detour: int
    status: str
    exit_code: int
    steps: int
    tokens: int
    correct: bool
    stop_reason: str


async def measure(world: str, detour: int, allow_private: bool) -> Figures:
    answerable = world != "unanswerable"
    model = dead_end.PersistentModel(detour=detour)
    llm, _ = scripted_client(model, budget=BUDGET)
    with LoopbackServer(routes=dead_end.routes(answerable=answerable)) as wiki:
        reader = LocalReader(ReaderConfig(allow_private_urls=allow_private), clock=FakeClock())
        try:
            deps = AgentDeps(
                llm=llm,
                search=dead_end.engine(wiki, answerable=answerable),
                reader=reader,
                clock=FakeClock(),
                sandbox=dead_end.CountingSandbox(),
            )
            from deepsearch.agent.loop import ResearchRun

            result = await ResearchRun(dead_end.QUESTION, deps, RunOptions()).run()
        finally:
            await reader.aclose()
    return Figures(
        world=world,
        detour=detour,
        status=result.status,
        exit_code=result.exit_code,
        steps=len(result.steps),
        tokens=result.usage.total_tokens,
        correct=dead_end.GOLD in result.answer and result.status == "answered",
        stop_reason=str(getattr(result, "stop_reason", None) or result.error or ""),
    )


def _row(f: Figures) -> str:
    share = f.tokens / BUDGET
    reason = f.stop_reason.replace("|", "/")[:90]
    return (
        f"| {f.world} | {f.detour} | {f.status} | {f.exit_code} | {f.steps} | {f.tokens:,} | "
        f"{share:.0%} | {'yes' if f.correct else 'no'} | {reason} |"
    )


def _stats(runs: list[Figures], pick: str) -> str:
    chosen = [f for f in runs if f.world == pick]
    if not chosen:
        return ""
    tokens = [f.tokens for f in chosen]
    steps = [f.steps for f in chosen]
    return (
        f"{pick}: tokens median {statistics.median(tokens):,.0f}, max {max(tokens):,}; "
        f"steps median {statistics.median(steps):g}, max {max(steps)}"
    )


def _before_ratio() -> float:
    answered = statistics.median(t for w, *_, t in BEFORE if w == "answerable")
    return max(t for w, *_, t in BEFORE if w == "unanswerable") / answered


def render(runs: list[Figures]) -> str:
    answered = statistics.median(f.tokens for f in runs if f.world == "answerable")
    missed = max(f.tokens for f in runs if f.world == "unanswerable")
    lines = [
        "## Stopping when nothing new is found (issue 18)",
        "",
        "Command: `python -m bench stopping` (bench/stopping.py). In process: the real loop, "
        "LLM client and reader over loopback HTTP, on the link-dense multi-hop wiki with "
        "readable off-topic navbox pages (tests/fakes/dead_end.py). The LLM is scripted "
        "(`PersistentModel`): it acts on its prompt and, when stuck, keeps busy as real runs "
        "do (rephrased queries, navbox pages, the same program, the same sub-question). "
        f"Budget {BUDGET:,} tokens (the default), step limit 100 (the default). `detour`: idle "
        "moves the model makes after its first search (the same program, the same query "
        "again) before it reads; `unreadable`: the answerable world without "
        "--allow-private-urls (every read refused by the address guard).",
        "",
        "Before (the same bench at b088bf1, where progress was counted: a new query, URL "
        "or knowledge item of any content was progress):",
        "",
        "| world | detour | status | exit | steps | tokens | of budget |",
        "|---|---:|---|---:|---:|---:|---:|",
        *(
            f"| {w} | {d} | {st} | {code} | {steps} | {tok:,} | {tok / BUDGET:.0%} |"
            for w, d, st, code, steps, tok in BEFORE
        ),
        "",
        "After (this code):",
        "",
        "| world | detour | status | exit | steps | tokens | of budget | correct | why research ended |",
        "|---|---:|---|---:|---:|---:|---:|---|---|",
        *(_row(f) for f in runs),
        "",
        "- " + _stats(runs, "answerable"),
        "- " + _stats(runs, "unanswerable"),
        f"- The costliest unanswerable run is **{missed / answered:.1f}×** an answered run's "
        f"median tokens (aim: at most 3×; limit: 25% of the budget, 20 steps); before it "
        f"was {_before_ratio():.1f}×.",
        "- Every answerable run is still answered, the slow start (4 idle moves: the same "
        "program twice, the same query twice) included: the rule counts steps without new "
        "evidence in a row, and any relevant new page, result, sub-question or sub-answer "
        "resets it.",
    ]
    return "\n".join(lines)


async def _all() -> list[Figures]:
    return [await measure(world, detour, private) for world, detour, private in RUNS]


def run() -> str:
    return render(asyncio.run(_all()))


if __name__ == "__main__":
    print(run())
