"""Which similarity backend a run uses: provider embeddings when configured, else lexical."""

from __future__ import annotations

from deepsearch.agent.deps import AgentDeps
from deepsearch.agent.similarity import LexicalSimilarity, Similarity, make_similarity
from deepsearch.llm.client import LLMClient

_DEFAULT = LexicalSimilarity()


def build_similarity(llm: LLMClient) -> Similarity:
    return make_similarity(llm.embed if llm.embedder is not None else None)


def similarity_of(deps: AgentDeps) -> Similarity:
    """The run's backend; a shared lexical one when none was injected."""
    return deps.similarity if deps.similarity is not None else _DEFAULT
