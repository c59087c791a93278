"""Extraction quality on the article-extraction-benchmark (AEB) pages.

Scoring follows the upstream method: text is tokenized into words (\\w+), words
are grouped into shingles of 4, and per page true positives / false positives /
false negatives are counted over the shingle multisets and normalized so every
page weighs the same. Precision and recall are averaged over the pages where
they are defined; F1 is computed from those two averages (as upstream does).
The mean of per-page F1 is shown as well.

The first row is exactly the text the LLM reads: the raw page bytes through
`extract_body` (charset decoding included), i.e. `Page.text` as the reader builds it.
"""

from __future__ import annotations

import gzip
import json
import re
import resource
import statistics
import time
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from bench.__main__ import ROOT

DATA = ROOT.parent / "shared" / "data" / "extraction_aeb"
COMMAND = ".venv/bin/python -m bench extraction"
_WORD = re.compile(r"\w+")


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    words = _WORD.findall(text or "")
    # A text shorter than n words still yields one (short) shingle, as upstream.
    count = max(1, len(words) - n + 1)
    return Counter(tuple(words[i : i + n]) for i in range(count) if words[i : i + n])


def match(truth: str, pred: str) -> tuple[float, float, float]:
    """Normalized (tp, fp, fn) of one page."""
    t, p = shingles(truth), shingles(pred)
    tp = float(sum((t & p).values()))
    fp = float(sum((p - t).values()))
    fn = float(sum((t - p).values()))
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def _precision(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fp == 0 else tp / (tp + fp)


def _recall(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fn == 0 else tp / (tp + fn)


def score(counts: list[tuple[float, float, float]]) -> dict[str, float]:
    precision = statistics.mean(_precision(*c) for c in counts if c[0] + c[1] > 0)
    recall = statistics.mean(_recall(*c) for c in counts if c[0] + c[2] > 0)
    per_page = []
    for c in counts:
        p, r = _precision(*c), _recall(*c)
        per_page.append(2 * p * r / (p + r) if p + r else 0.0)
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall),
        "mean_page_f1": statistics.mean(per_page),
    }


class BenchPage(NamedTuple):
    key: str
    url: str
    raw: bytes  # the bytes a server would send
    html: str  # decoded as the reader decodes them
    truth: str


def load_pages() -> list[BenchPage]:
    """Every AEB page with its expected article text."""
    from deepsearch.web.charset import decode_body

    truth = json.loads((DATA / "ground-truth.json").read_text(encoding="utf-8"))
    pages = []
    for key, item in sorted(truth.items()):
        raw = gzip.decompress((DATA / "html" / f"{key}.html.gz").read_bytes())
        html = decode_body(raw, None, html=True)
        pages.append(BenchPage(key, item.get("url", ""), raw, html, item.get("articleBody", "")))
    return pages


def reader_text(page: BenchPage) -> str:
    """Page.text: the bytes through the reader's own extraction path."""
    from deepsearch.web.extract import Extracted, extract_body

    result = extract_body(page.raw, "text/html", page.url or "https://aeb.invalid/page")
    return result.text if isinstance(result, Extracted) else ""


def old_reader_markdown_plain(page: BenchPage) -> str:
    """What the reader gave before plain text: trafilatura markdown, syntax stripped."""
    import trafilatura

    markdown = trafilatura.extract(
        page.html,
        url=page.url or None,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_comments=False,
    )
    return _MD_LINK.sub(r"\1", _MD_SYNTAX.sub(" ", markdown or ""))


_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_SYNTAX = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+|\d+\.\s+)|[*_`|]", re.M)


def trafilatura_txt(page: BenchPage) -> str:
    import trafilatura

    return trafilatura.extract(page.html, url=page.url or None) or ""


def evaluate(
    pages: list[BenchPage], extractor: Callable[[BenchPage], str]
) -> tuple[dict[str, float], float, list[tuple[float, str]]]:
    counts: list[tuple[float, float, float]] = []
    worst: list[tuple[float, str]] = []
    started = time.perf_counter()
    for page in pages:
        c = match(page.truth, extractor(page))
        counts.append(c)
        p, r = _precision(*c), _recall(*c)
        worst.append((2 * p * r / (p + r) if p + r else 0.0, page.key[:12]))
    elapsed = time.perf_counter() - started
    return score(counts), len(pages) / elapsed, sorted(worst)[:5]


def run() -> str:
    if not (DATA / "ground-truth.json").is_file():
        return (
            "## Extraction quality (AEB)\n\n"
            f"Skipped: `{DATA}` is not present. Reproduce with `{COMMAND}`.\n"
        )
    import trafilatura  # noqa: F401  (import cost kept out of the timings)

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    pages = load_pages()
    variants = [
        ("**deepsearch `Page.text`: exactly what the LLM reads** (`extract_body`)", reader_text),
        ("trafilatura `extract()` defaults, plain text (the published setup)", trafilatura_txt),
        (
            "before: the reader's markdown with its syntax stripped afterwards",
            old_reader_markdown_plain,
        ),
    ]
    rows = []
    worst_reader: list[tuple[float, str]] = []
    mean_f1: dict[str, float] = {}
    for label, extractor in variants:
        metrics, rate, worst = evaluate(pages, extractor)
        mean_f1[extractor.__name__] = metrics["mean_page_f1"]
        if extractor is reader_text:
            worst_reader = worst
        rows.append(
            f"| {label} | {metrics['precision']:.3f} | {metrics['recall']:.3f} | "
            f"**{metrics['f1']:.3f}** | {metrics['mean_page_f1']:.3f} | {rate:.1f} |"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines = [
        "## Extraction quality (AEB)",
        "",
        f"Reproduce: `{COMMAND}`. {len(pages)} pages of the article-extraction-benchmark "
        "(`../shared/data/extraction_aeb`), scored with the upstream method: word 4-gram "
        "shingles, per-page precision and recall averaged, F1 from the averages "
        "(published: trafilatura 0.958, Readability.js 0.947). Target F1 ≥ 0.95.",
        "",
        "| extractor | precision | recall | F1 | mean per-page F1 | pages/s |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"Mean per-page F1 of the text the LLM reads: **{mean_f1['reader_text']:.3f}**, "
        f"trafilatura's plain default on the same pages: **{mean_f1['trafilatura_txt']:.3f}** "
        f"({'≥' if mean_f1['reader_text'] >= mean_f1['trafilatura_txt'] else '<'}; "
        "the target is ≥). The reader runs trafilatura once with links kept in its tree, "
        "takes the main content's link targets from it, then renders the tree as plain "
        "text with the links dissolved (anchor text kept) and tables one row a line.",
        "",
        f"Peak RSS of the whole run: {peak_mb:.0f} MB (before loading pages: "
        f"{rss_before / 1024:.0f} MB). Pages/s is single-threaded extraction only; the reader "
        "runs it in a worker thread, one page at a time per fetch.",
        "",
        "Lowest per-page F1 (`Page.text`): "
        + ", ".join(f"`{key}` {f1:.2f}" for f1, key in worst_reader),
    ]
    return "\n".join(lines) + "\n"
