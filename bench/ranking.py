"""URL ranking on HotpotQA-100: plain BM25 order vs our rank_urls with the lexical rerank.

The 994 corpus paragraphs are written as one markdown file each ("# Title" + text)
and served by the `local` search provider (deepsearch/web/search/local.py: bm25s
over ~800-character passages, query-centred ~300-character snippets, file://
URLs); when that provider cannot be imported, bm25s is called directly with the
paragraph's first 300 characters as snippet. Per question the URL pool is built the
way a search step builds it: the question plus its entity-like sub-queries
(capitalised spans, quoted strings) each return their top 20, every hit adds 1 to
the URL's weight. Gold = the supporting-fact paragraphs.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "hotpotqa100"
HITS_PER_QUERY = 20
SNIPPET_CHARS = 300
COMMAND = ".venv/bin/python -m bench ranking"

_ENTITY = re.compile(r'"([^"]+)"|((?:[A-Z][\w\'.-]*)(?:\s+(?:of|the|de|and|[A-Z][\w\'.-]*))*)')
_QUESTION_WORDS = {"What", "Which", "Who", "Whom", "When", "Where", "Why", "How", "Is", "Are", "Was",
                   "Were", "Did", "Does", "Do", "In", "The", "A", "An", "This", "That", "These"}  # fmt: skip


def sub_queries(question: str) -> list[str]:
    """The question plus its entity-like spans (a stand-in for the LLM's queries)."""
    spans = []
    for quoted, capital in _ENTITY.findall(question):
        span = (quoted or capital).strip(" ?.,")
        first = span.split(" ")[0] if span else ""
        if first in _QUESTION_WORDS:
            span = span[len(first) :].strip()
        if len(span) >= 3 and span not in spans:
            spans.append(span)
    return [question, *spans]


def url_for(title: str) -> str:
    return "https://corpus.local/wiki/" + quote(title.replace(" ", "_"), safe="_()")


def _metrics(ranked: list[list[str]], gold: list[set[str]]) -> tuple[float, float]:
    recalls, rr = [], []
    for urls, want in zip(ranked, gold, strict=True):
        recalls.append(len(set(urls[:5]) & want) / len(want))
        rank = next((i for i, u in enumerate(urls, 1) if u in want), None)
        rr.append(1 / rank if rank else 0.0)
    return statistics.mean(recalls), statistics.mean(rr)


Hit = tuple[str, str, str]  # (url, title, snippet)


def _bm25s_searcher(corpus: dict[str, list[str]]) -> tuple[Callable[[str], list[Hit]], str]:
    import bm25s

    titles = list(corpus)
    texts = ["".join(corpus[t]) for t in titles]
    index = bm25s.BM25()
    tokens = bm25s.tokenize(
        [f"{t}. {x}" for t, x in zip(titles, texts, strict=True)],
        stopwords="en",
        show_progress=False,
    )
    index.index(tokens, show_progress=False)

    def search(query: str) -> list[Hit]:
        q = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        if not q[0]:
            return []
        docs, scores = index.retrieve(q, k=HITS_PER_QUERY, show_progress=False)
        return [
            (url_for(titles[int(d)]), titles[int(d)], texts[int(d)][:SNIPPET_CHARS])
            for d, sc in zip(docs[0], scores[0], strict=True)
            if sc > 0
        ]

    return search, "bm25s called directly (the `local` provider was not importable)"


def _local_searcher(
    corpus: dict[str, list[str]], workdir: Path
) -> tuple[Callable[[str], list[Hit]], str, dict[str, str]]:
    from deepsearch.web.search.local import LocalCorpus
    from deepsearch.web.types import SearchQuery

    docs = workdir / "docs"
    docs.mkdir()
    url_of: dict[str, str] = {}
    for i, (title, sentences) in enumerate(corpus.items()):
        path = docs / f"{i:04d}.md"
        path.write_text(f"# {title}\n\n{''.join(sentences)}\n", encoding="utf-8")
        url_of[title] = path.resolve().as_uri()
    local = LocalCorpus(docs, index_root=workdir / "index")

    def search(query: str) -> list[Hit]:
        results = local.search(SearchQuery(q=query, limit=HITS_PER_QUERY))
        return [(r.url, r.title, r.snippet) for r in results]

    return search, "the `local` search provider (file:// URLs, one per paragraph)", url_of


def embedding_similarity() -> tuple[object | None, str]:
    """(c)'s backend: the configured provider's embeddings, or why there is none."""
    try:
        from deepsearch.config import load_config
        from deepsearch.llm.factory import build_llm_client
        from deepsearch.llm.tracker import TokenTracker
        from deepsearch.runtime import build_similarity

        settings = load_config().settings
        model = settings.llm.embedding_model or settings.llm.jina_embedding_model
        if not model:
            return None, (
                "not run: no embedding model configured "
                "(`llm.embedding_model` or `llm.jina_embedding_model` + a key)"
            )
        llm = build_llm_client(settings, TokenTracker(50_000_000))
        if llm.embedder is None:
            return None, "not run: the embedding model's key is missing"
        return build_similarity(llm), f"`{model}`"
    except Exception as exc:  # no provider, no key, no network: say so in the table
        return None, f"not run: {type(exc).__name__}: {str(exc)[:120]}"


async def _evaluate(
    questions: list[dict],
    search: Callable[[str], list[Hit]],
    url_of: Callable[[str], str],
    sim: object | None = None,
) -> dict[str, object]:
    from deepsearch.agent.retrieval.ranking import rank_urls
    from deepsearch.agent.retrieval.similarity import LexicalSimilarity
    from deepsearch.agent.types import UrlRecord

    sim = sim or LexicalSimilarity()
    plain, by_weight, ours, ceiling, timings = [], [], [], [], []
    single, rerank_only = [], []
    gold = [{url_of(t) for t, _ in q["supporting_facts"]} for q in questions]
    for q in questions:
        question = q["question"]
        plain.append([url for url, _, _ in search(question)])
        pool: dict[str, UrlRecord] = {}
        for query in sub_queries(question):
            for url, title, snippet in search(query):
                if url in pool:
                    pool[url].weight += 1
                else:
                    pool[url] = UrlRecord(url=url, title=title, snippet=snippet)
        records = list(pool.values())
        ceiling.append([r.url for r in records])
        by_weight.append([r.url for r in sorted(records, key=lambda r: (-r.weight, r.url))])
        started = time.perf_counter()
        # Defaults (max_per_host=2, top_k=20): a single-host pool is not capped.
        ranked = await rank_urls(records, question=question, sim=sim)
        timings.append(time.perf_counter() - started)
        ours.append([s.url for s in ranked])
        # Ablations: the same rank_urls on the question-only pool (all weights 1),
        # and the similarity alone over the full pool (no formula terms).
        alone = [r.model_copy(update={"weight": 1.0}) for r in records if r.url in set(plain[-1])]
        ranked = await rank_urls(alone, question=question, sim=sim)
        single.append([s.url for s in ranked])
        sims = await sim.scores(question, [f"{r.title} {r.snippet}" for r in records])
        order = sorted(zip(sims, records, strict=True), key=lambda x: (-x[0], x[1].url))
        rerank_only.append([r.url for _, r in order])
    pool_recall = statistics.mean(
        len(set(c) & g) / len(g) for c, g in zip(ceiling, gold, strict=True)
    )
    return {
        "plain": _metrics(plain, gold),
        "weight": _metrics(by_weight, gold),
        "ours": _metrics(ours, gold),
        "single": _metrics(single, gold),
        "rerank_only": _metrics(rerank_only, gold),
        "pool_recall": pool_recall,
        "pool_size": statistics.median(len(c) for c in ceiling),
        "median_ms": statistics.median(timings) * 1000,
        "n": len(questions),
    }


def _run_eval(
    questions: list[dict], corpus: dict[str, list[str]], sim: object | None = None
) -> tuple[dict[str, object], str]:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            search, how, url_map = _local_searcher(corpus, Path(tmp))
            url_of: Callable[[str], str] = url_map.__getitem__
        except ImportError:
            search, how = _bm25s_searcher(corpus)
            url_of = url_for
        return asyncio.run(_evaluate(questions, search, url_of, sim)), how


def run() -> str:
    if not (DATA / "hotpotqa_train.json").is_file():
        return "## Ranking (HotpotQA-100)\n\nSkipped: ../shared/data/hotpotqa100 is absent.\n"
    questions = json.loads((DATA / "hotpotqa_train.json").read_text(encoding="utf-8"))
    corpus = json.loads((DATA / "hotpotqa_train_corpus.json").read_text(encoding="utf-8"))
    r, how = _run_eval(questions, corpus)
    emb_sim, emb_label = embedding_similarity()
    if emb_sim is not None:
        er, em = _run_eval(questions, corpus, emb_sim)[0]["ours"]  # type: ignore[misc]
        row_c = f"| (c) `rank_urls` with embeddings ({emb_label}) | {er:.3f} | {em:.3f} |"
    else:
        row_c = f"| (c) `rank_urls` with embeddings | {emb_label} | |"
    (pr, pm), (wr, wm), (orr, om) = r["plain"], r["weight"], r["ours"]
    (sr, sm), (rr, rm) = r["single"], r["rerank_only"]
    return f"""## Ranking (HotpotQA-100)

Command: `{COMMAND}`. {r["n"]} questions, 994 paragraphs (HippoRAG's HotpotQA sample);
gold = the 2 supporting-fact paragraphs per question. Search: {how}. The pool per
question is the union of the top {HITS_PER_QUERY} for the question and for each of its
entity-like sub-queries (median pool {r["pool_size"]:.0f} URLs, holding
{r["pool_recall"]:.1%} of the gold paragraphs); weight = number of hits.

| ranking | recall@5 | MRR |
|---|---:|---:|
| (a) plain BM25 order for the question | {pr:.3f} | {pm:.3f} |
| pool ordered by hit count only (the frequency term) | {wr:.3f} | {wm:.3f} |
| **(b) `rank_urls`: reference formula + lexical rerank** | **{orr:.3f}** | **{om:.3f}** |
| ablation: `rank_urls` on (a)'s 20 candidates, all weights 1 | {sr:.3f} | {sm:.3f} |
| ablation: lexical similarity alone over the pool | {rr:.3f} | {rm:.3f} |
{row_c}

(b) vs (a): recall@5 ratio {orr / pr:.2f}, MRR ratio {om / pm:.2f}. Median `rank_urls`
time {r["median_ms"]:.1f} ms per question (pool of ~{r["pool_size"]:.0f}; each snippet's
features computed once, then cached).

Reading the numbers: every URL lives in one folder on no host, so the formula's host
term and all but the last path term add the same constant to every URL; only the
frequency term (0.5 x weight / N), a tiny per-file path term and the rerank (0.8 x
min-max normalised similarity of title + snippet to the question) order the list.
The gain over BM25 comes from the rerank: on BM25's own 20 candidates with all
weights 1 `rank_urls` gets recall@5 {sr:.3f} vs {pr:.3f}, although it sees only the
title and a ~{SNIPPET_CHARS}-character snippet; the title weighs in (gold paragraphs are
the pages of the entities the question names) and character n-grams match inflected
and possessive forms ("Krilanovich's"). The frequency term does not help here: hit
counts from entity sub-queries alone order the pool worse than BM25 ({wr:.3f}), and
(b) pays for them against the single-query ablation (MRR {om:.3f} vs {sm:.3f}). Nothing
was tuned on this set: the weights are the reference's, the lexical backend's are
its defaults.
"""
