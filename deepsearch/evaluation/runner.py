"""Running an eval: the questions concurrently, in this process, each one a
deepsearch.session.ResearchSession, as `deepsearch "question"` runs one (with its
cassette), with answer-key sites blocked.

Each finished question is graded and appended to results.jsonl at once. Every run
records a cassette under DIR/cassettes/<id>/; with `replay_from`, each run is
replayed from that eval's cassette instead (no network, no key), and an LLM grade of
the same answer is taken from that eval's results rather than asked again.
A configuration problem (no key, a rejected key) stops the whole eval: every other
question would fail the same way, and no line is written for it.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import shutil
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from deepsearch.agent.result import ResearchResult
from deepsearch.config import Settings
from deepsearch.errors import ConfigError
from deepsearch.evaluation.answer_keys import AnswerKeyReader, AnswerKeySearch
from deepsearch.evaluation.dataset import EvalItem
from deepsearch.evaluation.grading import GraderName, exact_grade, llm_grade
from deepsearch.evaluation.results import Grade, ResultLine, ResultsFile, read_results
from deepsearch.llm.client import LLMClient

if TYPE_CHECKING:
    from deepsearch.agent.deps import AgentDeps

CASSETTES = "cassettes"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def cassette_dir(root: Path, item_id: str) -> Path:
    """DIR/cassettes/<id>; an id that is no safe file name gets a hashed one."""
    name = _SAFE.sub("_", item_id)[:80]
    if name != item_id or name in (".", ".."):
        name = f"{name}-{hashlib.sha256(item_id.encode()).hexdigest()[:8]}"
    return root / CASSETTES / name


@dataclass
class EvalPlan:
    settings: Settings
    out: Path
    grader: GraderName = "llm"
    concurrency: int = 4
    replay_from: Path | None = None
    blocked_sites: list[str] = field(default_factory=list)


Progress = Callable[[ResultLine], None]


class EvalRunner:
    def __init__(self, plan: EvalPlan, *, on_done: Progress | None = None) -> None:
        self.plan = plan
        self.results = ResultsFile(plan.out)
        self.on_done = on_done or (lambda line: None)
        self._grader: LLMClient | None = None
        self._stack = AsyncExitStack()
        self._earlier = _earlier_grades(plan.replay_from, plan.grader)

    def pending(self, items: list[EvalItem]) -> list[EvalItem]:
        """The questions without a result: never run, or failed before any answer
        (`ResultLine.failed`: run again, their new line replaces the old one)."""
        done = {line.id for line in self.results.done() if not line.failed}
        return [item for item in items if item.id not in done]

    @staticmethod
    def missing_cassettes_in(source: Path | None, items: list[EvalItem]) -> list[EvalItem]:
        """The questions the eval at `source` (--replay-from) has no cassette for."""
        if source is None:
            return []
        return [i for i in items if not (cassette_dir(source, i.id) / "run.json").is_file()]

    async def run(self, items: list[EvalItem]) -> None:
        gate = asyncio.Semaphore(self.plan.concurrency)

        async def one(item: EvalItem) -> None:
            async with gate:
                line = await self.run_item(item)
            self.results.append(line)
            self.on_done(line)

        async with self._stack:
            tasks = [asyncio.create_task(one(item)) for item in items]
            try:
                await asyncio.gather(*tasks)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    async def run_item(self, item: EvalItem) -> ResultLine:
        try:
            result = await self._research(item)
        except ConfigError:
            raise
        except Exception as exc:  # one broken question must not stop the eval
            return ResultLine(id=item.id, question=item.question, gold=item.answer, error=_why(exc))
        if result.error_kind == "configuration":
            raise ConfigError(result.error or "configuration error")
        line = _line(item, result)
        line.grader = self.plan.grader
        try:
            line.grade = await self._grade(item, line)
        except Exception as exc:  # an ungraded answer counts as not attempted
            line.error = f"grader: {_why(exc)}"
        return line

    async def _research(self, item: EvalItem) -> ResearchResult:
        from deepsearch.cassettes import CassetteSpec
        from deepsearch.session import ResearchSession

        if self.plan.replay_from is not None:
            source = cassette_dir(self.plan.replay_from, item.id)
            if not (source / "run.json").is_file():
                raise FileNotFoundError(f"no cassette for {item.id!r} in {source.parent}")
            spec = CassetteSpec(mode="replay", directory=source)
        else:
            target = cassette_dir(self.plan.out, item.id)
            shutil.rmtree(target, ignore_errors=True)  # a killed run's partial cassette
            spec = CassetteSpec(mode="record", directory=target)
        # A benchmark's runs are its results file's, not the user's history.
        session = ResearchSession(
            item.question, self.plan.settings, cassette=spec, adapt=self._block_answer_keys,
            keep=False,
        )  # fmt: skip
        return await session.execute()

    def _block_answer_keys(self, deps: AgentDeps) -> None:
        if self.plan.blocked_sites:  # outermost: a blocked call is never recorded
            deps.search = AnswerKeySearch(deps.search, self.plan.blocked_sites)
            deps.reader = AnswerKeyReader(deps.reader, self.plan.blocked_sites)

    async def _grade(self, item: EvalItem, line: ResultLine) -> Grade:
        if self.plan.grader == "exact":
            return exact_grade(line.answer, line.status, item.answer, item.aliases)
        earlier = self._earlier.get((item.id, line.answer))
        if earlier is not None:
            return earlier
        return await llm_grade(
            self._grader_client(), item.question, line.answer, line.status, item.answer,
            item.aliases,
        )  # fmt: skip

    def _grader_client(self) -> LLMClient:
        if self._grader is None:
            from deepsearch.llm.factory import build_llm_client
            from deepsearch.llm.tracker import TokenTracker

            # The grader's tokens are not the question's: a budget of its own.
            self._grader = build_llm_client(self.plan.settings, TokenTracker(10_000_000))
            self._stack.push_async_callback(self._grader.aclose)
        return self._grader


def _earlier_grades(source: Path | None, grader: GraderName) -> dict[tuple[str, str], Grade]:
    """(id, answer) -> the LLM grade the replayed eval gave (re-scoring at no cost)."""
    if source is None or grader != "llm":
        return {}
    lines = read_results(source / "results.jsonl")
    return {
        (line.id, line.answer): line.grade
        for line in lines
        if line.error is None and line.grader == "llm"
    }


def _line(item: EvalItem, result: ResearchResult) -> ResultLine:
    return ResultLine(
        id=item.id,
        question=item.question,
        gold=item.answer,
        answer=result.answer,
        status=result.status,
        confidence=result.confidence,
        tokens=result.usage.total_tokens,
        llm_calls=sum(tool.calls for tool in result.usage.by_tool.values()),
        cost_usd=result.usage.cost_usd,
        elapsed_s=result.elapsed_s,
        references=[ref.url for ref in result.references],
        error=result.error,
    )


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]
