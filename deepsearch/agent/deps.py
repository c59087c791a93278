"""What a research run needs from the outside world, injected as one bundle."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field

from deepsearch.agent.events import AgentEvent
from deepsearch.agent.retrieval.similarity import LexicalSimilarity, Similarity
from deepsearch.clock import Clock, SystemClock
from deepsearch.config import AgentOptions, Settings
from deepsearch.config.models import ResultsPerQuery
from deepsearch.llm.call_watch import CallWatch
from deepsearch.llm.client import LLMClient
from deepsearch.web.types import Reader, SearchProvider, SearchQuery, SearchResult

if TYPE_CHECKING:  # the sandbox module loads only when a run builds one
    from deepsearch.sandbox.runner import SandboxResult


class SandboxLike(Protocol):
    def availability(self) -> tuple[bool, str]: ...
    async def run(self, code: str, data: dict[str, Any]) -> SandboxResult: ...


# (question, queries just run, their results) -> follow-up queries; the seam the
# retrieval-quality layer fills with an LLM query rewriter.
QueryRewriter = Callable[[str, list[str], list[SearchResult], bool], Awaitable[list[SearchQuery]]]


class RunOptions(AgentOptions):
    """The options of one run: the agent.* keys of the validated configuration
    (AgentOptions declares each one and its bounds, once) and what the loop adds."""

    page_chars: int = Field(12_000, ge=500, description="per-page knowledge budget")
    results_per_query: ResultsPerQuery = 10  # search.results_per_query
    # A team child's answer goes into its parent's knowledge; the parent finalizes once.
    finalize: bool = True

    @classmethod
    def from_settings(cls, settings: Settings) -> RunOptions:
        """The run's options from the configuration: no field copied by hand."""
        agent = settings.agent.model_dump(include=set(AgentOptions.model_fields))
        return cls(**agent, results_per_query=settings.search.results_per_query)


def _ignore(_: AgentEvent) -> None:
    return None


@dataclass
class AgentDeps:
    llm: LLMClient
    search: SearchProvider
    reader: Reader
    clock: Clock = field(default_factory=SystemClock)
    sandbox: SandboxLike | None = None
    emit: Callable[[AgentEvent], None] = _ignore
    # Lexical unless the runtime injects provider embeddings.
    similarity: Similarity = field(default_factory=LexicalSimilarity)
    rewrite_queries: QueryRewriter | None = None
    # Where the run's LLM calls stand (llm/call_watch.py, agent/stalls.py); None: unwatched.
    calls: CallWatch | None = None
