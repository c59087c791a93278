"""Second-pass search, the rules: what the LLM query rewriter replies (`RewriteReply`)
and the queries read from it (`proposed_queries`: whitespace folded, repeats dropped,
each with its language). The LLM call, its prompt and the similarity dedup against
what was searched are the loop's step (agent/steps/rewrite.py), which fills the search
action's `rewrite_queries` seam.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from deepsearch.agent import limits


class RewrittenQuery(BaseModel):
    # built at first use: a typical run never validates one (issue 21)
    model_config = ConfigDict(defer_build=True)

    q: str = Field(max_length=120, description="a short keyword query")
    language: str | None = Field(None, description="ISO 639-1 code if not the question's language")


class RewriteReply(BaseModel):
    think: str = Field("", max_length=400)
    queries: list[RewrittenQuery] = Field(default_factory=list, max_length=limits.MAX_REWRITES)


def proposed_queries(reply: RewriteReply) -> dict[str, str | None]:
    """Each distinct query of the reply (whitespace folded, in the reply's order) and
    its language code (None: the question's language)."""
    languages: dict[str, str | None] = {}
    for item in reply.queries:
        text = " ".join(item.q.split())
        if text and text not in languages:
            languages[text] = (item.language or "").strip().lower() or None
    return languages
