"""Agent-loop overhead, prompt growth, and what concurrent I/O buys.

1. Orchestration overhead: a zero-latency scripted LLM and an in-memory web, runs of
   10, 50 and 200 steps (search / visit / reflect cycling, so knowledge and the URL
   pool keep growing). Reported: ms per step, and its growth from 10 to 200 steps.
2. Prompt tokens per step as knowledge grows (bounded by the context rule).
3. A 10-step run with 300 ms per LLM call and 300 ms per page read, against the
   same run with every web call forced to run one at a time.

Reproduce: `python -m bench orchestration`
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.judging.evaluator import QuestionEval
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.schema import allowed_actions
from deepsearch.clock import SystemClock
from deepsearch.llm.base import Completion, CompletionRequest
from deepsearch.llm.client import LLMClient
from deepsearch.llm.tokens import count_tokens
from deepsearch.llm.tracker import TokenTracker
from deepsearch.web.types import Page, ReadFailure, SearchQuery, SearchResult
from tests.fakes.memory_web import FakeReader, FakeSearch
from tests.fakes.scripted_llm import ScriptedProvider, offline_settings

PAGE_TEXT = " ".join(
    f"Sentence {i} about the history of the tower, its engineers and the {i}th fact."
    for i in range(60)
)


def cycling_agent(prompt_sizes: list[int]) -> Any:
    counter = [0]

    def reply(request: CompletionRequest) -> Any:
        props = (request.json_schema or {}).get("properties", {})
        if "needs_definitive" in props:
            return QuestionEval().model_dump()  # a plain fact question
        if "action" not in props:  # an evaluator or analyzer: reject, keep researching
            return {
                "think": "",
                "pass": False,
                "improvement_plan": "more",
                "recap": "r",
                "blame": "b",
                "improvement": "i",
            }
        if request.tool == "agent_beast":
            return {"think": "", "action": {"answer": {"answer": "done"}}}
        counter[0] += 1
        prompt_sizes.append(count_tokens(request.system))
        allowed = allowed_actions(request.json_schema or {})
        n = counter[0]
        for action in ("search", "visit", "reflect"):
            if action in allowed:
                payload = {
                    "search": {"queries": [f"tower fact {n}", f"engineer {n}"]},
                    "visit": {"url_indices": [1, 2, 3]},
                    "reflect": {"questions": [f"sub-question number {n}?"]},
                }[action]
                return {"think": f"step {n}", "action": {action: payload}}
        return {"think": "", "action": {allowed[0]: {"answer": "x"}}}

    return reply


def web(delay_s: float = 0.0) -> tuple[FakeSearch, FakeReader]:
    def results(query: SearchQuery) -> list[SearchResult]:
        slug = abs(hash(query.q)) % 10_000
        return [
            SearchResult(
                title=f"Result {slug}-{i}",
                url=f"https://site{slug % 97}-{i}.org/p/{slug}",
                snippet=f"Snippet {i} for {query.q}",
                provider="fake",
            )
            for i in range(5)
        ]

    class AnyPageReader(FakeReader):
        async def read(self, url: str) -> Page | ReadFailure:
            self.reads.append(url)
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            return Page(
                url=url,
                final_url=url,
                title="page",
                text=PAGE_TEXT,
                fetched_at="2026-01-01T00:00:00Z",
            )

    return FakeSearch(results, delay_s=delay_s), AnyPageReader({}, delay_s=delay_s)


class SlowProvider(ScriptedProvider):
    def __init__(self, fn: Any, delay_s: float) -> None:
        super().__init__(fn)
        self.delay_s = delay_s

    async def complete(self, request: CompletionRequest) -> Completion:
        await asyncio.sleep(self.delay_s)
        return await super().complete(request)


class Serialized:
    """Forces every call of the wrapped web client to run one at a time."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "serialized")
        self._lock = asyncio.Lock()

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        async with self._lock:
            return await self.inner.search(query)

    async def read(self, url: str) -> Page | ReadFailure:
        async with self._lock:
            return await self.inner.read(url)


def build(
    steps: int,
    *,
    llm_delay: float = 0.0,
    web_delay: float = 0.0,
    serial: bool = False,
    prompt_sizes: list[int] | None = None,
) -> ResearchRun:
    sizes = prompt_sizes if prompt_sizes is not None else []
    fn = cycling_agent(sizes)
    provider = SlowProvider(fn, llm_delay) if llm_delay else ScriptedProvider(fn)
    llm = LLMClient(
        provider=provider,
        provider_name="openai",
        settings=offline_settings(),
        tracker=TokenTracker(50_000_000),
    )
    search, reader = web(web_delay)
    deps = AgentDeps(
        llm=llm,
        search=Serialized(search) if serial else search,
        reader=Serialized(reader) if serial else reader,
        clock=SystemClock(),
    )
    return ResearchRun(
        "Who designed the tower and when was it built?",
        deps,
        RunOptions(max_steps=steps, direct_answer=False, max_bad_attempts=1000),
    )


def time_run(steps: int) -> tuple[float, float, list[int]]:
    """(loop ms per step, one-off finalizing ms, prompt tokens per agent step)."""
    sizes: list[int] = []
    run = build(steps, prompt_sizes=sizes)
    marks: dict[str, float] = {}

    def on_event(event: Any) -> None:
        if getattr(event, "kind", "") == "phase" and event.phase == "finalizing":
            marks["finalizing"] = time.perf_counter()

    run.deps.emit = on_event
    started = time.perf_counter()
    asyncio.run(run.run())
    ended = time.perf_counter()
    loop_end = marks.get("finalizing", ended)
    return (loop_end - started) * 1000 / steps, (ended - loop_end) * 1000, sizes


def _step_costs() -> tuple[list[tuple[int, float, float]], list[int]]:
    """(steps, median ms per step, median finalizing ms) rows, and the 200-step prompt sizes."""
    rows = []
    sizes_200: list[int] = []
    for steps in (10, 50, 200):
        samples, finals = [], []
        for _ in range(3):
            ms, final_ms, sizes = time_run(steps)
            samples.append(ms)
            finals.append(final_ms)
            if steps == 200:
                sizes_200 = sizes
        rows.append((steps, statistics.median(samples), statistics.median(finals)))
    return rows, sizes_200


def _concurrent_vs_sequential() -> tuple[float, float]:
    started = time.perf_counter()
    asyncio.run(build(10, llm_delay=0.3, web_delay=0.3).run())
    concurrent = time.perf_counter() - started
    started = time.perf_counter()
    asyncio.run(build(10, llm_delay=0.3, web_delay=0.3, serial=True).run())
    return concurrent, time.perf_counter() - started


def run() -> str:
    from deepsearch.llm.tokens import get_encoding

    get_encoding()  # load the vocabulary outside the timings
    rows, sizes_200 = _step_costs()
    growth = rows[-1][1] / rows[0][1]
    concurrent, sequential = _concurrent_vs_sequential()

    checkpoints = [1, 10, 25, 50, 100, 150, 200]
    prompt_rows = "\n".join(
        f"| {c} | {sizes_200[c - 1]:,} |" for c in checkpoints if c <= len(sizes_200)
    )
    table = "\n".join(f"| {s} | {ms:.1f} | {fin:.0f} |" for s, ms, fin in rows)
    return f"""## Agent loop orchestration

Command: `python -m bench orchestration` (bench/orchestration.py). Zero-latency scripted
LLM and in-memory web; the agent cycles search (2 queries × 5 results) / visit (3 pages
of {len(PAGE_TEXT):,} chars) / reflect, so knowledge and the URL pool grow every step.
Token counting of every prompt (offline tiktoken) is included: it is real overhead.

| steps | median ms per research step (3 runs) | finalizing, once per run (ms) |
|---:|---:|---:|
{table}

Finalizing (the editor pass and quote-anchored references over every page read) runs
once per run and grows with the pages read (3 per visit step here: ~200 pages at 200
steps); it is reported apart from the per-step loop cost.

At 200 steps: **{rows[-1][1]:.1f} ms per step** (target under 10 ms: **{"met" if rows[-1][1] < 10 else "not met"}**).
Growth from 10 to 200 steps: **{growth:.2f}×** per step. What still grows is linear in
the run's size, by design: the URL pool is filtered and prior-scored every step (only
the best 60 by prior are reranked), knowledge selection scores every item (cached per
item and question), and new queries are deduped against every query already run.
Since search no longer locks itself out once 50 URLs wait (issue 8), this scripted
run keeps searching every cycle: about 99 searches and a pool of ~980 URLs at 200
steps instead of 55 and ~550 before, which is most of the rise from 7.2 ms (the
query dedup and the pool ranking dominate a profile). Still ~1–2% of one LLM call.

Prompt tokens per agent step in the 200-step run (knowledge is capped by the context
rule, so the prompt stops growing once the allowance is full):

| agent step | system prompt tokens |
|---:|---:|
{prompt_rows}

10-step run with 300 ms per LLM call and 300 ms per search/page: concurrent I/O
**{concurrent:.1f} s** vs every web call forced sequential **{sequential:.1f} s**:
**{sequential / concurrent:.2f}×** faster.
"""
