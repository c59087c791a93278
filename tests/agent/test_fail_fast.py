"""A run whose search cannot work stops within two steps and says why; a run that
stops making progress ends its research phase early (issue 10, item 1)."""

from __future__ import annotations

from typing import Any

from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.progress import NO_PROGRESS_LIMIT, no_progress_reason
from deepsearch.web.search.base import SearchProviderError
from deepsearch.web.search.chain import SearchChain, SearchUnavailable
from deepsearch.web.types import SearchQuery, SearchResult
from tests.agent.helpers import make_deps, options, router


class Broken:
    """A search provider that always errors the way a real one does."""

    supports_site_operator = True

    def __init__(self, name: str, *, configuration: bool = False) -> None:
        self.name = name
        self.configuration = configuration
        self.queries: list[str] = []

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        self.queries.append(query.q)
        detail = "UnsupportedProtocol: not a usable URL" if self.configuration else "ConnectError"
        raise SearchProviderError(self.name, "network", detail, configuration=self.configuration)


def searches(n: int) -> list[dict[str, Any]]:
    return [
        {"think": "look", "action": {"search": {"queries": [f"eiffel tower fact {i}"]}}}
        for i in range(n)
    ]


QUESTION = "When was the Eiffel Tower completed?"


async def test_every_provider_erroring_twice_stops_the_run_at_step_one() -> None:
    a, b = Broken("searxng"), Broken("duckduckgo")
    deps, provider = make_deps(router(searches(1)), search=SearchChain([a, b], retry_pause_s=0))  # type: ignore[list-item]
    run = ResearchRun(QUESTION, deps, options())
    result = await run.run()
    assert len(a.queries) == len(b.queries) == 2  # the search, and its one retry
    assert result.status == "failed"
    assert result.error_kind == "fatal"
    assert result.error is not None
    assert "searxng: network (ConnectError)" in result.error
    assert "duckduckgo: network (ConnectError)" in result.error
    assert not [c for c in provider.calls if c.tool == "agent_beast"], "no Beast Mode guess"
    # The step it ended is in the history (the summary says "failed in 1 step", not 0).
    assert [s.action for s in result.steps] == ["error"]
    assert "search is not working" in result.steps[0].detail


async def test_a_configuration_cause_is_marked_as_such() -> None:
    broken = Broken("searxng", configuration=True)
    deps, _ = make_deps(router(searches(1)), search=SearchChain([broken], retry_pause_s=0))  # type: ignore[list-item]
    result = await ResearchRun(QUESTION, deps, options()).run()
    assert result.error_kind == "configuration"
    assert result.error is not None and "not a usable URL" in result.error
    assert len(result.steps) <= 2


async def test_a_partial_answer_survives_the_stop() -> None:
    deps, _ = make_deps(
        router(searches(1)), search=SearchChain([Broken("searxng")], retry_pause_s=0)
    )  # type: ignore[list-item]
    run = ResearchRun(QUESTION, deps, options())
    run.state.candidate_answer = "Probably 1889."
    result = await run.run()
    assert result.error_kind == "fatal"
    assert "1889" in result.answer


async def test_steps_that_change_nothing_end_the_research_phase_early() -> None:
    # The same query and the same sub-question over and over: after the first two
    # steps nothing new is searched, asked or learned.
    same = {"think": "look", "action": {"search": {"queries": ["eiffel tower"]}}}
    ask = {"think": "hm", "action": {"reflect": {"questions": [QUESTION]}}}
    # One useful step, the idle ones, then Beast Mode's two (whatever comes next).
    deps, provider = make_deps(router(([same, ask] * 20)[: 3 + NO_PROGRESS_LIMIT]))
    run = ResearchRun(QUESTION, deps, options(max_steps=50))
    await run.run()
    research = [c for c in provider.calls if c.tool == "agent"]
    assert len(research) == 1 + NO_PROGRESS_LIMIT  # one useful step, then the idle ones
    assert run.stop_reason == no_progress_reason(NO_PROGRESS_LIMIT)
    # Beast Mode still answers: asked twice, its first reply (a search) being no answer.
    assert [c.tool for c in provider.calls if c.tool == "agent_beast"] == ["agent_beast"] * 2


def test_an_error_says_its_kind_and_a_cut_short_snapshot_carries_it() -> None:
    from deepsearch.agent.result import failure_kind
    from deepsearch.errors import ConfigError, ProviderAuthError, ProviderError

    assert failure_kind(ProviderAuthError("401")) == "configuration"  # exit 2
    assert failure_kind(ConfigError("bad flag")) == "configuration"
    assert failure_kind(SearchUnavailable([])) == "fatal"  # exit 1
    assert failure_kind(ProviderError("503")) == "fatal"  # retries ran out: exit 1
    assert failure_kind(OSError("disk full")) == "runtime"

    deps, _ = make_deps(router([]))  # never asked: a snapshot needs no step
    run = ResearchRun("Q?", deps, options())
    cut = run.snapshot("failed", error="401 from the provider", failure=ProviderAuthError("401"))
    assert cut.error_kind == "configuration"
    assert run.snapshot("failed", error="boom").error_kind == "runtime"
    assert run.snapshot("interrupted").error_kind is None
