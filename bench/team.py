"""Team mode at simulated latency: wall time and tokens of --team-size 1 vs 3 on
multi-part questions (issue 13).

In process: the real ResearchRun and LLMClient (token accounting, budget checks,
concurrency slots of 4 as shipped) over the scripted multi-part world of
bench/team_world.py, with API-like latency: every LLM call takes
LLM_BASE_S plus LLM_PER_TOKEN_S per output token, every search SEARCH_S, every page
read READ_S. The scripted model researches one part at a time, as agents tend to on a
comparison; the planner splits one sub-question per part. Two worlds: each part one
hop away (search its name, read its page) and two hops (its page names the yearbook
that has the figure: search, read, search, read).

Reproduce: `.venv/bin/python -m bench team`
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass
from typing import Any

from bench import team_world as world
from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.loop import ResearchRun
from deepsearch.llm.base import Completion, CompletionRequest
from deepsearch.llm.client import LLMClient
from deepsearch.llm.tokens import count_tokens
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.scripted_llm import ScriptedProvider, offline_settings

LLM_BASE_S = 0.6
LLM_PER_TOKEN_S = 0.008
SEARCH_S = 0.6
READ_S = 0.4
BUDGET = 500_000  # --effort medium
TEAM_SIZES = (1, 3)
HOPS = (1, 2)


class SlowProvider(ScriptedProvider):
    """A scripted reply after the time an API would take to produce it."""

    def __init__(self, fn: Any, scale: float) -> None:
        super().__init__(fn)
        self.scale = scale

    async def complete(self, request: CompletionRequest) -> Completion:
        completion = await super().complete(request)
        delay = LLM_BASE_S + LLM_PER_TOKEN_S * count_tokens(completion.text, model="gpt-4o-mini")
        await asyncio.sleep(delay * self.scale)
        return completion


@dataclass
class Figures:
    question: str
    hops: int
    team_size: int
    status: str
    correct: bool
    wall_s: float
    llm_calls: int
    tokens: int
    children: int
    main_steps: int


async def measure(question: str, team_size: int, *, hops: int, scale: float = 1.0) -> Figures:
    provider = SlowProvider(world.World(), scale)
    llm = LLMClient(
        provider=provider,
        provider_name="openai",
        settings=offline_settings(),
        tracker=TokenTracker(BUDGET),
    )
    search, reader = world.web(
        hops=hops, search_delay_s=SEARCH_S * scale, read_delay_s=READ_S * scale
    )
    deps = AgentDeps(llm=llm, search=search, reader=reader)
    started = time.perf_counter()
    result = await ResearchRun(question, deps, RunOptions(team_size=team_size)).run()
    wall = time.perf_counter() - started
    wanted = [world.FIGURES[p] for p in world.parts_in(question)]
    return Figures(
        question=question,
        hops=hops,
        team_size=team_size,
        status=result.status,
        correct=all(figure in result.answer for figure in wanted),
        wall_s=round(wall, 2),
        llm_calls=len(provider.calls),
        tokens=result.usage.total_tokens,
        children=len(result.team),
        main_steps=sum(1 for s in result.steps if s.agent == "main"),
    )


def _row(f: Figures) -> str:
    return (
        f"| {f.question} | {f.hops} | {f.team_size} | {f.status} | {'yes' if f.correct else 'no'} | "
        f"{f.wall_s:.1f} | {f.llm_calls} | {f.tokens:,} | {f.children} | {f.main_steps} |"
    )


def _summary(runs: list[Figures], hops: int) -> list[str]:
    solo = [f for f in runs if f.team_size == 1 and f.hops == hops]
    team = [f for f in runs if f.team_size == 3 and f.hops == hops]
    wall = [t.wall_s / s.wall_s for s, t in zip(solo, team, strict=True)]
    tokens = [t.tokens / s.tokens for s, t in zip(solo, team, strict=True)]
    verdict = "faster" if statistics.median(wall) < 1 else "slower"
    return [
        f"- **{hops} hop{'s' if hops > 1 else ''} per part: a team is {verdict}.** "
        f"Median wall time: **{statistics.median(f.wall_s for f in solo):.1f} s** alone, "
        f"**{statistics.median(f.wall_s for f in team):.1f} s** with --team-size 3 "
        f"(median ratio {statistics.median(wall):.2f}).",
        f"Median tokens: {statistics.median(f.tokens for f in solo):,.0f} alone, "
        f"{statistics.median(f.tokens for f in team):,.0f} with a team "
        f"(median ratio {statistics.median(tokens):.2f}).",
        f"Correct (every part's figure in the answer): {sum(f.correct for f in solo)}/"
        f"{len(solo)} alone, {sum(f.correct for f in team)}/{len(team)} with a team.",
    ]


def render(runs: list[Figures]) -> str:
    lines = [
        "## Team mode (--team-size 1 vs 3)",
        "",
        "Command: `python -m bench team` (bench/team.py). In process, the real loop and LLM "
        "client over the scripted multi-part world (bench/team_world.py) at "
        f"simulated latency: {LLM_BASE_S * 1000:.0f} ms + {LLM_PER_TOKEN_S * 1000:.0f} ms per "
        f"output token per LLM call (4 in flight at most, as shipped), "
        f"{SEARCH_S * 1000:.0f} ms per search, {READ_S * 1000:.0f} ms per page. The scripted "
        "model researches one part at a time; the planner splits one sub-question per part. "
        f"Budget {BUDGET:,} tokens (effort medium).",
        "",
        "| question | hops | team size | status | correct | wall s | LLM calls | tokens | children "
        "| parent steps |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|",
        *(_row(f) for f in runs),
        "",
        *(" ".join(_summary(runs, hops)) for hops in sorted({f.hops for f in runs})),
        "",
        "A team pays a fixed cost in LLM rounds and tokens: the planner call, each child's "
        "question classification and evaluated answer, and the parent's own evaluated "
        "answer. What it buys is the parts researched side by side instead of one after "
        "another, which pays more the more steps a part takes.",
    ]
    return "\n".join(lines)


async def _all(scale: float) -> list[Figures]:
    await measure(world.QUESTION, 1, hops=1, scale=0.0)  # warm-up: tokenizer, imports
    runs = []
    for hops in HOPS:
        for question in world.QUESTIONS:
            for size in TEAM_SIZES:
                runs.append(await measure(question, size, hops=hops, scale=scale))
    return runs


def run(scale: float = 1.0) -> str:
    return render(asyncio.run(_all(scale)))


if __name__ == "__main__":
    print(run())
