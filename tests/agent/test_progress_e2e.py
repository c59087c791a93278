"""Issue 18's "done when", on the link-dense loopback wiki with a model that does not
give up (tests/fakes/dead_end.py): an unanswerable question ends within 20 steps and
25% of the default budget; a web whose every read is refused ends within 20 steps
with the cause named (exit 2); a slow start still gets the answer."""

from __future__ import annotations

import pytest

from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.result import ResearchResult
from deepsearch.config import ReaderConfig
from deepsearch.web.reader import LocalReader
from tests.agent.helpers import make_deps, options
from tests.fakes import dead_end
from tests.fakes.clock import FakeClock
from tests.fakes.web_server import LoopbackServer

DEFAULT_BUDGET = 500_000


async def research(
    *, answerable: bool, allow_private: bool = True, detour: int = 0
) -> tuple[ResearchResult, dead_end.CountingSandbox]:
    sandbox = dead_end.CountingSandbox()
    model = dead_end.PersistentModel(detour=detour)
    with LoopbackServer(routes=dead_end.routes(answerable=answerable)) as wiki:
        reader = LocalReader(ReaderConfig(allow_private_urls=allow_private), clock=FakeClock())
        try:
            deps, _ = make_deps(
                model,
                budget=DEFAULT_BUDGET,
                search=dead_end.engine(wiki, answerable=answerable),
                reader=reader,  # type: ignore[arg-type]
                sandbox=sandbox,
            )
            result = await ResearchRun(dead_end.QUESTION, deps, options()).run()
        finally:
            await reader.aclose()
    return result, sandbox


@pytest.mark.timeout(60)
async def test_an_unanswerable_question_ends_early_and_honestly() -> None:
    result, sandbox = await research(answerable=False, detour=4)
    assert result.status == "not_found" and result.exit_code == 4
    assert len(result.steps) <= 20
    assert result.usage.total_tokens <= DEFAULT_BUDGET // 4
    # Evidence kept coming (the first hop's page, navbox pages), no step of the chain
    # did: the number is the one docs/chain.md prints.
    assert result.stop_reason == "no new step of the chain in 8 steps"
    assert len(sandbox.programs) == 1, "the same program is never run twice"


@pytest.mark.timeout(60)
async def test_a_slow_start_still_gets_the_answer() -> None:
    quick, _ = await research(answerable=True)
    slow, _ = await research(answerable=True, detour=4)
    for result in (quick, slow):
        assert result.status == "answered" and dead_end.GOLD in result.answer
        assert result.stop_reason == "answer accepted"
    assert slow.stop_step is not None and quick.stop_step is not None
    assert slow.stop_step > quick.stop_step


@pytest.mark.timeout(60)
async def test_a_web_whose_every_read_is_refused_ends_naming_the_cause() -> None:
    result, _ = await research(answerable=True, allow_private=False)
    assert result.status == "failed" and result.error_kind == "configuration"
    assert result.exit_code == 2
    assert len(result.steps) <= 20 and result.usage.total_tokens <= DEFAULT_BUDGET // 4
    assert result.error is not None and "--allow-private-urls" in result.error
    assert "\n" not in result.error  # one plain line
    assert result.steps[-1].action == "error"
    assert result.stop_reason == result.error
