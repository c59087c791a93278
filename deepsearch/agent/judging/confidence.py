"""How much a run's answer can be trusted, from what the run itself knows (no LLM call).

    checks  = 1.0 if the answer passed every evaluator check,
              0.5 if it was accepted at step 1 without evaluation (a direct answer),
              0.0 otherwise (forced, or never evaluated)
    sources = min(distinct hosts of the cited quotes, 3) / 3, hosts whose cited page
              carries instructions to the model (judging/injection.py) not counted
    c       = 0.15 + 0.45 * checks + 0.40 * sources
    c      *= 0.6  if Beast Mode (or a limit) forced the answer
    c      *= 0.7  if the model itself flagged the answer as uncertain
    c      *= 0.4  if every cited host's page carries instructions to the model (for
                   an answer citing none: if a page the run read does)
    c       = 0    if there is no supported answer (not found, failed, empty)

rounded to 2 decimals. docs/output.md documents the same formula; keep them together.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from deepsearch.web.urls import hostname_of

Checks = Literal["passed", "direct", "none"]
CHECK_WEIGHT: dict[Checks, float] = {"passed": 1.0, "direct": 0.5, "none": 0.0}
BASE, CHECKS_SHARE, SOURCES_SHARE = 0.15, 0.45, 0.40
MAX_SOURCES = 3
FORCED_FACTOR = 0.6
UNCERTAIN_FACTOR = 0.7
INSTRUCTED_FACTOR = 0.4


class ConfidenceBasis(BaseModel):
    """The signals behind `confidence`, reported with it (`--json`)."""

    supported: bool = Field(description="the answer answers the question (model's own field)")
    checks: Checks = Field(description="passed every check / direct answer / not evaluated")
    forced: bool = Field(description="Beast Mode or a limit forced the answer")
    sources: int = Field(ge=0, description="distinct hosts the cited quotes come from")
    uncertain: bool = Field(description="the model flagged the answer as uncertain")
    instructed_sources: int = Field(
        0,
        ge=0,
        description="hosts of the answer's support (its cited pages; for an answer citing "
        "none, the pages read) whose text carries instructions to the model",
    )


def distinct_sources(urls: Iterable[str]) -> int:
    """Distinct hosts (`web.urls.hostname_of`: ``www.`` and case ignored); a local
    file counts as its own source."""
    keys = set()
    for url in urls:
        parts = urlsplit(url)
        host = hostname_of(url)
        keys.add(host if host else f"{parts.scheme}:{parts.path}")
    return len(keys)


def confidence(basis: ConfidenceBasis) -> float:
    """The formula of the module docstring: a number in [0, 1]."""
    if not basis.supported:
        return 0.0
    clean = max(0, basis.sources - basis.instructed_sources)
    value = (
        BASE
        + CHECKS_SHARE * CHECK_WEIGHT[basis.checks]
        + SOURCES_SHARE * min(clean, MAX_SOURCES) / MAX_SOURCES
    )
    if basis.instructed_sources and not clean:
        value *= INSTRUCTED_FACTOR
    if basis.forced:
        value *= FORCED_FACTOR
    if basis.uncertain:
        value *= UNCERTAIN_FACTOR
    return round(min(1.0, max(0.0, value)), 2)
