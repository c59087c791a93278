"""What a research run needs from the outside world, injected as one bundle."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from deepsearch.agent.events import AgentEvent
from deepsearch.agent.retrieval.similarity import LexicalSimilarity, Similarity
from deepsearch.clock import Clock, SystemClock
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


class RunOptions(BaseModel):
    max_steps: int = Field(100, ge=1)
    timeout_s: float | None = Field(None, gt=0)
    max_bad_attempts: int = Field(2, ge=1)
    direct_answer: bool = True
    boost_hostnames: list[str] = Field(default_factory=list)
    bad_hostnames: list[str] = Field(default_factory=list)
    only_hostnames: list[str] = Field(default_factory=list)
    max_references: int = Field(10, ge=0)
    language: str | None = None
    page_chars: int = Field(12_000, ge=500, description="per-page knowledge budget")
    results_per_query: int = Field(10, ge=1)
    # A forced answer whose confidence is below this is reported as not_found.
    min_confidence: float | None = Field(None, ge=0.0, le=1.0)
    # Team mode and effort presets (deepsearch/agent/team/): concurrent sub-researches,
    # whether reflect is offered, a second independent search before accepting.
    team_size: int = Field(1, ge=1, le=8)
    reflect: bool = True
    recheck: bool = False
    # A team child's answer goes into its parent's knowledge; the parent finalizes once.
    finalize: bool = True


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
