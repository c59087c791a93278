"""Plain data the agent keeps and passes around (no behaviour, no I/O)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

KnowledgeType = Literal["qa", "side-info", "url", "coding"]
# Where a pooled URL came from: a search result, or a link harvested from a read page.
UrlOrigin = Literal["search", "link"]
# The evaluator's checks, one name each (their order and rules: judging/evaluator.py).
EvalType = Literal["definitive", "freshness", "plurality", "completeness", "strict"]
# How a run ends (its exit code: result.STATUS_EXIT).
Status = Literal["answered", "forced", "not_found", "interrupted", "failed"]


class KnowledgeItem(BaseModel):
    """One thing learned, fed back to the LLM on later steps."""

    question: str
    answer: str
    type: KnowledgeType
    references: list[str] = Field(default_factory=list)  # URLs
    updated: str | None = None  # ISO date or a human range
    step: int = 0  # the step that produced it (recency for the context rule)
    id: int = 0  # position in the run's knowledge list: a stable label in prompts
    # Caches for the context rule (items never change after creation); not serialized.
    # Plain fields, not private attributes: pydantic's private-attribute lookup is slow.
    tokens: int | None = Field(None, exclude=True, repr=False)
    words: frozenset[str] | None = Field(None, exclude=True, repr=False)
    relevance_to: dict[str, float] = Field(default_factory=dict, exclude=True, repr=False)
    # Always shown: an accepted sub-answer or a candidate answer rests on it.
    pinned: bool = False


class UrlRecord(BaseModel):
    """A candidate URL in the pool, keyed by its normalized form."""

    url: str
    title: str = ""
    snippet: str = ""
    weight: float = 1.0  # +1 per search hit, +0.1 per in-page link
    date: str | None = None
    score: float = 0.0  # filled by ranking
    # "link" until a search returns the URL: harvested links are a capped, low-weight
    # class that never counts against searching again (see gating).
    origin: UrlOrigin = "search"
    hits: int = 0  # search results that returned this URL (several queries: a strong pick)
    passage: bool = False  # a link found inside a read page's evidence passage


class ScoredUrl(BaseModel):
    """A URL as shown to the LLM: 1-based index into the numbered list."""

    index: int
    url: str
    title: str
    snippet: str
    score: float
    origin: UrlOrigin = "search"
    hits: int = 0
    # The title/snippet shares enough words with the question being worked on
    # (backend-independent, unlike the min-max normalised rerank).
    relevant: bool = False
    # The title or anchor names a bridge term the run learned (retrieval/focus.py).
    chain: bool = False


class Reference(BaseModel):
    """A citation anchored to a verbatim quote from a page or snippet the run saw."""

    url: str
    title: str = ""
    quote: str
    date: str | None = None


class EvalMetric(BaseModel):
    """One check the answer must pass, and how many failures of it the run still allows."""

    type: EvalType
    attempts_left: int
