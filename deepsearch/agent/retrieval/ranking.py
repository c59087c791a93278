"""Rank the URL pool for the LLM's numbered list.

The score is the reference formula (node-deepresearch.md §4) plus a semantic
rerank computed *in the same step* against the *current* question:

    host   = 0.5 * count(host) / N  (+ 2 if the host is boosted)
    path   = sum over depth i of 0.4 * 0.8**i * count(path prefix up to segment i+1) / N
    freq   = 0.5 * weight / N
    rerank = 0.8 * relevance, relevance = min-max normalised similarity of
             "title snippet" to the question over this pool (1.0 = best match)
    score  = clamp(host + path + freq + rerank, 0, 5)

N is the number of URLs left after filtering. The first three terms are priors
(popular hosts, popular sections, often-seen URLs); when every URL shares a host
they add the same constant to every score and only `freq` and `rerank` order the
list. Min-max normalisation makes the rerank term backend-agnostic: lexical and
embedding cosines live on different scales, their order is what matters.

Then at most `max_per_host` URLs per hostname (None disables the cap; like the
reference it does nothing when all URLs share one host, and ``file://`` URLs of the
local corpus are not capped), the top `top_k`, 1-based indices. Ties break on the URL string, so the order is stable.

Fairness: a URL that several searches returned (`hits >= 2`) is exempt from the
per-host cap and shown before any single-hit URL is (it is never left out while
weaker ones are in). Harvested in-page links take at most `max_links` places, at LINK_SCORE_FACTOR of
their score.
Focus (`focus.py`, where the research stands): each URL's title and snippet (a link's
anchor) add FOCUS_FACTOR * `Focus.score`: a URL naming a bridge term the run learned
(the next hop's name) ranks first; a link with a focus term is not scaled down.
Only search results and links inside a read page's passages get the term: navigation,
footers and navboxes are no step of anything. A link inside a passage relevant to the
focus that names no bridge yet (the next hop, before the model names it) gets
NEAR_FOCUS: ahead of navigation, behind a named hop.
Links found inside a read page's passages join the pool beyond the link cap
(`actions/visit.py`), so the next hop's link is there when search no longer finds it.
Each shown URL says whether its title and snippet share enough of the question's
words to count as relevant (`ScoredUrl.relevant`, read by the search gate).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from functools import lru_cache
from urllib.parse import urlsplit

from deepsearch.agent.retrieval.focus import Focus
from deepsearch.agent.retrieval.lexical import word_coverage
from deepsearch.agent.retrieval.similarity import Similarity
from deepsearch.agent.types import ScoredUrl, UrlRecord
from deepsearch.web.urls import host_matches_any, hostname

FREQ_FACTOR = 0.5
HOST_FACTOR = 0.5
PATH_FACTOR = 0.4
DECAY = 0.8
BOOST = 2.0
RERANK_FACTOR = 0.8
RERANK_SNIPPET_CHARS = 400
MIN_SCORE = 0.0
MAX_SCORE = 5.0
# The numbered list the agent sees each step.
TOP_K = 20
MAX_PER_HOST = 2
# In-page links: a low-weight class; a few places keep a next hop reachable, and
# their score is scaled down so search results usually rank first.
MAX_LINKS_SHOWN = 5
LINK_SCORE_FACTOR = 0.5
# Weight of where the research stands (focus.py) in a URL's score.
FOCUS_FACTOR = 1.5
# The focus term of a link inside a relevant passage that names no bridge (yet).
NEAR_FOCUS = 0.3
# Share of the question's content words a title + snippet must carry to be relevant.
RELEVANT_WORD_SHARE = 0.25


@lru_cache(maxsize=65_536)
def _prefixes(url: str) -> tuple[str, ...]:
    try:
        path = urlsplit(url).path
    except ValueError:
        return ()
    segments = [s for s in path.split("/") if s]
    return tuple("/" + "/".join(segments[: i + 1]) for i in range(len(segments)))


def path_prefixes(url: str) -> list[str]:
    """'/a/b/c' -> ['/a', '/a/b', '/a/b/c']; query and fragment ignored. Cached: the
    whole pool is prior-scored every step."""
    return list(_prefixes(url))


def filter_urls(
    records: Iterable[UrlRecord],
    *,
    visited: set[str],
    bad_hostnames: Iterable[str] = (),
    only_hostnames: Iterable[str] = (),
) -> list[UrlRecord]:
    bad, only = list(bad_hostnames), list(only_hostnames)
    kept, seen = [], set()
    for record in records:
        host = hostname(record.url)
        if record.url in visited or record.url in seen or not record.url.strip():
            continue
        seen.add(record.url)
        if host_matches_any(host, bad) or (only and not host_matches_any(host, only)):
            continue
        kept.append(record)
    return kept


def prior_scores(records: list[UrlRecord], boost_hostnames: Iterable[str] = ()) -> list[float]:
    """The reference formula without the rerank term."""
    n = len(records)
    if n == 0:
        return []
    boost = list(boost_hostnames)
    hosts = [hostname(r.url) for r in records]
    host_count = Counter(hosts)
    prefixes = [path_prefixes(r.url) for r in records]
    # Prefixes are counted per host: "/wiki" on two sites is not one section.
    prefix_count = Counter((h, p) for h, ps in zip(hosts, prefixes, strict=True) for p in ps)
    scores = []
    for record, host, ps in zip(records, hosts, prefixes, strict=True):
        host_term = HOST_FACTOR * host_count[host] / n
        if host_matches_any(host, boost):
            host_term += BOOST
        path_term = sum(
            PATH_FACTOR * DECAY**i * prefix_count[(host, p)] / n for i, p in enumerate(ps)
        )
        freq_term = FREQ_FACTOR * record.weight / n
        scores.append(host_term + path_term + freq_term)
    return scores


def _minmax(values: list[float]) -> list[float]:
    if not values:
        return []
    low, high = min(values), max(values)
    if high - low < 1e-12:
        return [1.0 if high > 0 else 0.0 for _ in values]
    return [(v - low) / (high - low) for v in values]


async def relevance(records: list[UrlRecord], question: str, sim: Similarity) -> list[float]:
    """Min-max normalised similarity of title + snippet to the question.

    Snippets merged from many hits can grow long; the first ~400 characters carry the
    signal and keep the per-step rerank cheap (its cost grows with text length).
    """
    texts = [f"{r.title} {r.snippet[:RERANK_SNIPPET_CHARS]}".strip() for r in records]
    if not question.strip() or not records:
        return [0.0] * len(records)
    raw = await sim.scores(question, texts)
    return [0.0 if not t else v for t, v in zip(texts, _minmax(raw), strict=True)]


def keep_k_per_host(
    ranked: list[tuple[float, UrlRecord]], k: int | None
) -> list[tuple[float, UrlRecord]]:
    """At most `k` URLs per hostname, in rank order.

    As in the reference, a no-op when the pool has a single distinct host (a
    one-site `--only-hostnames` run must not shrink to two URLs), and URLs without
    a hostname (``file://`` results of the local corpus) are never capped.
    """
    hosts = {hostname(item[1].url) for item in ranked} - {""}
    if k is None or len(hosts) <= 1:
        return ranked
    seen: Counter[str] = Counter()
    kept = []
    for item in ranked:
        host = hostname(item[1].url)
        if not host or seen[host] < k:
            seen[host] += 1
            kept.append(item)
    return kept


def is_relevant(question: str, record: UrlRecord) -> bool:
    """Backend-independent: the title and snippet carry enough of the question's words."""
    text = f"{record.title} {record.snippet[:RERANK_SNIPPET_CHARS]}"
    return bool(text.strip()) and word_coverage(question, text) >= RELEVANT_WORD_SHARE


def select_shown(
    scored: list[tuple[float, UrlRecord]], max_per_host: int | None, top_k: int, max_links: int
) -> list[tuple[float, UrlRecord]]:
    """The shown list from the ranked pool: multi-hit URLs first and uncapped, then
    the others under the per-host cap, links limited to `max_links`; by score."""
    strong = [item for item in scored if item[1].hits >= 2][:top_k]
    others = keep_k_per_host([item for item in scored if item[1].hits < 2], max_per_host)
    rest: list[tuple[float, UrlRecord]] = []
    links = 0
    for item in others:
        if len(strong) + len(rest) >= top_k:
            break
        if item[1].origin == "link":
            if links >= max_links:
                continue
            links += 1
        rest.append(item)
    return sorted(strong + rest, key=lambda item: (-item[0], item[1].url))


def _scored(
    pool: list[UrlRecord],
    priors: list[float],
    rel: list[float],
    focus: Focus | None,
    near: Collection[str],
) -> tuple[list[tuple[float, UrlRecord]], set[str]]:
    """Each URL's score, and the chain links (naming a bridge term). Navigation, footers
    and navboxes (links outside the passages) get no focus term; a link inside a
    relevant passage (`near`) that names no bridge gets NEAR_FOCUS. A link with a focus
    term is not scaled down."""
    texts = [
        f"{r.title} {r.snippet[:RERANK_SNIPPET_CHARS]}" if r.origin == "search" or r.passage else ""
        for r in pool
    ]
    chain = {rec.url for rec, t in zip(pool, texts, strict=True) if focus and focus.names_bridge(t)}
    focused = [
        (focus.score(t) if focus and t else 0.0) or (NEAR_FOCUS if rec.url in near else 0.0)
        for rec, t in zip(pool, texts, strict=True)
    ]
    scored = [
        (
            min(MAX_SCORE, max(MIN_SCORE, p + RERANK_FACTOR * r + FOCUS_FACTOR * f))
            * (LINK_SCORE_FACTOR if rec.origin == "link" and f == 0.0 else 1.0),
            rec,
        )
        for p, r, f, rec in zip(priors, rel, focused, pool, strict=True)
    ]
    return scored, chain


async def rank_urls(
    records: list[UrlRecord],
    *,
    question: str,
    sim: Similarity,
    boost_hostnames: Iterable[str] = (),
    bad_hostnames: Iterable[str] = (),
    only_hostnames: Iterable[str] = (),
    visited: set[str] | None = None,
    max_per_host: int | None = 2,
    top_k: int = 20,
    rerank_limit: int | None = 60,
    max_links: int = MAX_LINKS_SHOWN,
    focus: Focus | None = None,
    near: Collection[str] = (),
) -> list[ScoredUrl]:
    """Filter, score (priors + same-step rerank), cap per host, number 1..top_k.

    Only the `rerank_limit` best URLs by prior are reranked (the rest keep their
    prior): the pool grows every step and similarity is the expensive part, while a
    URL far down the prior order rarely makes the shown top 20.
    Inputs are not mutated; `UrlRecord.score` of the inputs is left alone.
    """
    pool = filter_urls(
        records,
        visited=visited or set(),
        bad_hostnames=bad_hostnames,
        only_hostnames=only_hostnames,
    )
    priors = prior_scores(pool, boost_hostnames)
    if rerank_limit is not None and len(pool) > rerank_limit:
        best = sorted(range(len(pool)), key=lambda i: (-priors[i], pool[i].url))[:rerank_limit]
        rel = [0.0] * len(pool)
        for i, score in zip(
            best, await relevance([pool[i] for i in best], question, sim), strict=True
        ):
            rel[i] = score
    else:
        rel = await relevance(pool, question, sim)
    scored, chain = _scored(pool, priors, rel, focus, near)
    scored.sort(key=lambda item: (-item[0], item[1].url))
    shown = select_shown(scored, max_per_host, top_k, max_links)
    return [
        ScoredUrl(
            index=i,
            url=rec.url,
            title=rec.title,
            snippet=rec.snippet,
            score=round(s, 4),
            origin=rec.origin,
            hits=rec.hits,
            relevant=is_relevant(question, rec),
            chain=rec.url in chain,
        )
        for i, (s, rec) in enumerate(shown, start=1)
    ]
