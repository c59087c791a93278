"""The similarity seam: one interface, a lexical default and an embedding backend.

Every consumer (query/question dedup, URL rerank, passage selection, reference
anchoring) calls `scores` or `matrix` and compares the result against the
backend's own thresholds, because lexical and embedding cosines live on
different scales.

Backends and thresholds
-----------------------
``LexicalSimilarity`` (offline default, no model download)
    TF-IDF cosine over two feature blocks, each L2-normalised and mixed 50/50:
    word unigrams + bigrams (exact terms, word order) and character 3-5-grams
    inside word boundaries (inflection, compounds). Han and kana, written without
    spaces, count one character per "word" (so word bigrams are character bigrams)
    and add character 2-3-grams of each run. IDF is computed over the texts of each
    call (smoothed, so two-text calls work).

    Thresholds were tuned on the hand-made pairs in tests/agent/retrieval/test_similarity.py
    (``DUP_PAIRS``, ``DISTINCT_PAIRS``, ``CITE_TRIPLES``; the tests re-check them).
    Reworded duplicate queries score 0.36-1.00 and distinct queries on the same
    topic 0.08-0.51: lexical cosine alone cannot separate short queries that
    differ in one decisive word ("population of Tokyo 2023" / "... Osaka 2023").
    So ``dedup`` first applies a word rule (same content words up to inflection,
    or word-set Jaccard >= 0.8), which catches 15 of the 16 duplicates and none of
    the 14 distinct pairs, and only then the cosine at ``dedup_threshold = 0.58``,
    above every distinct pair (max 0.51) and below the one duplicate the word rule
    misses (0.62). A pair that differs in a number ("GDP of France 2023" / "2024",
    cosine 0.63) is never a duplicate. Dropping a distinct query costs more than
    searching twice, so the threshold errs high. An answer sentence scores
    0.23-0.35 against the source sentence it restates and <= 0.10 against an
    unrelated sentence of the same page (a purely numeric paraphrase scores 0.03
    and is, correctly, not citable lexically): ``cite_threshold = 0.20``.
``EmbeddingSimilarity`` (the configured provider's embeddings)
    Cosine of embeddings. ``dedup_threshold = 0.86`` and ``cite_threshold = 0.80``
    are the reference system's values for jina-embeddings-v3 (not measured here:
    no embedding provider offline). Cosine scales differ between models (OpenAI
    text-embedding-3 puts related sentences lower than Jina does), so both can be
    overridden per instance. When the provider has no embeddings (``embed``
    returns None) or fails, the instance falls back to the lexical backend for the
    rest of the run and its thresholds switch with it: read
    ``dedup_threshold``/``cite_threshold`` *after* awaiting a call.

``word_jaccard`` is the cheap near-duplicate check (dependencies.md §7 measured
word-set Jaccard as the best duplicate/same-topic separator); ``dedup`` applies it
before the backend. The tokenizer, feature blocks and word rules live in
``lexical``, which owns them.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from deepsearch.agent.retrieval.lexical import (
    PURE_PYTHON_PAIRS,
    block_products,
    idf_weights,
    same_content_words,
    sparse_dot,
    tf_features,
    unit_weighted,
    word_jaccard,
    words,
)
from deepsearch.errors import DeepsearchError
from deepsearch.text import numbers_in

EmbedFn = Callable[[list[str]], Awaitable[list[list[float]] | None]]

LEXICAL_DEDUP_THRESHOLD = 0.58
LEXICAL_CITE_THRESHOLD = 0.20
EMBEDDING_DEDUP_THRESHOLD = 0.86
EMBEDDING_CITE_THRESHOLD = 0.80
JACCARD_DUP_THRESHOLD = 0.8


@runtime_checkable
class Similarity(Protocol):
    """Scores in [0, 1] (higher = more similar) plus the thresholds to read them by.

    Read-only members: a backend may switch them (the embedding one falls back)."""

    @property
    def name(self) -> str: ...

    @property
    def dedup_threshold(self) -> float: ...

    @property
    def cite_threshold(self) -> float: ...

    async def scores(self, query: str, texts: Sequence[str]) -> list[float]: ...

    async def matrix(self, a: Sequence[str], b: Sequence[str]) -> list[list[float]]: ...

    async def dedup(self, new: Sequence[str], existing: Sequence[str]) -> list[str]:
        """`new` without items too similar to `existing` or to an earlier item of `new`."""
        ...


class _DedupMethod:
    """`sim.dedup(new, existing)`: the module-level `dedup` bound to this backend."""

    async def dedup(self, new: Sequence[str], existing: Sequence[str]) -> list[str]:
        # Inside a method, the name resolves to the module-level function below.
        return await dedup(new, existing, self)  # type: ignore[arg-type]


def _query_cosines(
    query: dict[str, float], blocks: Sequence[dict[str, float]], idf: dict[str, float]
) -> list[float]:
    """Cosine of the TF-IDF query block with each block, in one pass per block."""
    q = {term: tf * idf[term] for term, tf in query.items()}
    q_norm = math.sqrt(sum(v * v for v in q.values()))
    out: list[float] = []
    for block in blocks:
        norm2 = dot = 0.0
        for term, tf in block.items():
            weight = tf * idf[term]
            norm2 += weight * weight
            qv = q.get(term)
            if qv is not None:
                dot += weight * qv
        out.append(dot / (q_norm * math.sqrt(norm2)) if norm2 and q_norm else 0.0)
    return out


class LexicalSimilarity(_DedupMethod):
    """TF-IDF cosine over word 1-2-grams and character 3-5-grams (see module doc)."""

    name = "lexical"
    dedup_threshold = LEXICAL_DEDUP_THRESHOLD
    cite_threshold = LEXICAL_CITE_THRESHOLD

    def __init__(self, word_weight: float = 0.5) -> None:
        self.word_weight = word_weight

    def _vectors(self, texts: Sequence[str]) -> list[tuple[dict[str, float], dict[str, float]]]:
        feats = [tf_features(t) for t in texts]
        word_idf = idf_weights([f[0] for f in feats])
        char_idf = idf_weights([f[1] for f in feats])
        return [(unit_weighted(w, word_idf), unit_weighted(c, char_idf)) for w, c in feats]

    def _cos(self, x: tuple[dict, dict], y: tuple[dict, dict]) -> float:
        # Blocks are unit vectors, so the mix is a convex combination of two cosines.
        score = self.word_weight * sparse_dot(x[0], y[0]) + (1 - self.word_weight) * sparse_dot(
            x[1], y[1]
        )
        return min(1.0, max(0.0, score))

    def score_sync(self, query: str, texts: Sequence[str]) -> list[float]:
        """Same values as `_cos` over `_vectors`, but one pass per text and no weighted
        dicts: this runs every step over the URL list, so it must stay cheap."""
        if not texts:
            return []
        feats = [tf_features(t) for t in [query, *texts]]
        word_idf = idf_weights([f[0] for f in feats])
        char_idf = idf_weights([f[1] for f in feats])
        words_part = _query_cosines(feats[0][0], [f[0] for f in feats[1:]], word_idf)
        chars_part = _query_cosines(feats[0][1], [f[1] for f in feats[1:]], char_idf)
        w = self.word_weight
        return [
            min(1.0, max(0.0, w * a + (1 - w) * b))
            for a, b in zip(words_part, chars_part, strict=True)
        ]

    def matrix_sync(self, a: Sequence[str], b: Sequence[str]) -> list[list[float]]:
        if not a or not b:
            return [[] for _ in a]
        vecs = self._vectors([*a, *b])
        left, right = vecs[: len(a)], vecs[len(a) :]
        if len(a) * len(b) <= PURE_PYTHON_PAIRS:
            return [[self._cos(x, y) for y in right] for x in left]
        words_part = block_products([x[0] for x in left], [y[0] for y in right])
        chars_part = block_products([x[1] for x in left], [y[1] for y in right])
        grid = self.word_weight * words_part + (1 - self.word_weight) * chars_part
        return grid.clip(0.0, 1.0).tolist()

    async def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        return self.score_sync(query, texts)

    async def matrix(self, a: Sequence[str], b: Sequence[str]) -> list[list[float]]:
        return self.matrix_sync(a, b)


# --------------------------------------------------------------------- embeddings


def _cosine_matrix(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    import numpy as np

    left = np.asarray(a, dtype=float)
    right = np.asarray(b, dtype=float)
    left /= np.maximum(np.linalg.norm(left, axis=1, keepdims=True), 1e-12)
    right /= np.maximum(np.linalg.norm(right, axis=1, keepdims=True), 1e-12)
    return np.clip(left @ right.T, 0.0, 1.0).tolist()


class EmbeddingSimilarity(_DedupMethod):
    """Cosine of provider embeddings; sticky fallback to lexical when unavailable."""

    def __init__(
        self,
        embed: EmbedFn,
        fallback: LexicalSimilarity | None = None,
        *,
        dedup_threshold: float = EMBEDDING_DEDUP_THRESHOLD,
        cite_threshold: float = EMBEDDING_CITE_THRESHOLD,
    ) -> None:
        self._embed = embed
        self._fallback = fallback or LexicalSimilarity()
        self._dedup = dedup_threshold
        self._cite = cite_threshold
        self.available = True

    @property
    def name(self) -> str:
        return "embedding" if self.available else "lexical (embeddings unavailable)"

    @property
    def dedup_threshold(self) -> float:
        return self._dedup if self.available else self._fallback.dedup_threshold

    @property
    def cite_threshold(self) -> float:
        return self._cite if self.available else self._fallback.cite_threshold

    async def _vectors(self, texts: list[str]) -> list[list[float]] | None:
        if not self.available:
            return None
        try:
            vecs = await self._embed(texts)
        except DeepsearchError:
            vecs = None
        if vecs is None or len(vecs) != len(texts) or any(not v for v in vecs):
            # Unavailable once means unavailable for the run: don't pay for retries.
            self.available = False
            return None
        return vecs

    async def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        rows = await self.matrix([query], texts)
        return rows[0]

    async def matrix(self, a: Sequence[str], b: Sequence[str]) -> list[list[float]]:
        if not a or not b:
            return [[] for _ in a]
        vecs = await self._vectors([*a, *b])
        if vecs is None:
            return self._fallback.matrix_sync(a, b)
        return _cosine_matrix(vecs[: len(a)], vecs[len(a) :])


def make_similarity(embed: EmbedFn | None = None) -> Similarity:
    """The embedding backend when an embed function is given (e.g. ``LLMClient.embed``,
    which returns None without an embedding provider), else the lexical one."""
    return EmbeddingSimilarity(embed) if embed is not None else LexicalSimilarity()


# --------------------------------------------------------------------- dedup


def _at(pool: Sequence[str], candidates: Sequence[str], j: int) -> str:
    return pool[j] if j < len(pool) else candidates[j - len(pool)]


async def dedup(
    new: Sequence[str],
    existing: Sequence[str],
    sim: Similarity,
    *,
    threshold: float | None = None,
    jaccard_threshold: float = JACCARD_DUP_THRESHOLD,
) -> list[str]:
    """Keep the items of `new` not too similar to `existing` nor to an earlier kept item.

    Order is preserved. Blank items and exact (folded) repeats are dropped first,
    then word-set Jaccard near-duplicates, then anything whose similarity reaches
    the backend's dedup threshold (or `threshold`) unless the two mention different
    numbers ("GDP 2023" / "GDP 2024" are two requests).
    """
    candidates: list[str] = []
    seen = {" ".join(words(e)) for e in existing}
    for item in new:
        key = " ".join(words(item))
        if item.strip() and key not in seen:
            seen.add(key)
            candidates.append(item)
    if not candidates:
        return []
    pool = list(existing)
    grid = await sim.matrix(candidates, [*pool, *candidates])
    limit = sim.dedup_threshold if threshold is None else threshold
    kept: list[int] = []
    for i, item in enumerate(candidates):
        against = list(range(len(pool))) + [len(pool) + k for k in kept]
        refs = [*pool, *(candidates[k] for k in kept)]
        numbers = numbers_in(item)
        # Different numbers (years, versions, quarters) make a different request.
        too_close = any(
            grid[i][j] >= limit and numbers_in(_at(pool, candidates, j)) == numbers for j in against
        ) or any(
            word_jaccard(item, r) >= jaccard_threshold or same_content_words(item, r) for r in refs
        )
        if not too_close:
            kept.append(i)
    return [candidates[i] for i in kept]
