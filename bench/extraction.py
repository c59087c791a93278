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
import os
import re
import resource
import statistics
import time
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from bench.__main__ import ROOT

# ../shared/data beside the checkout; from a worktree in /work/wt/<name>, one level up.
DATA = next(
    (
        d
        for r in (ROOT.parent, ROOT.parents[1])
        if (d := r / "shared" / "data" / "extraction_aeb").is_dir()
    ),
    ROOT.parent / "shared" / "data" / "extraction_aeb",
)
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


def reader_text_with_fallbacks(page: BenchPage) -> str:
    """Page.text as it was with trafilatura's readability and justext comparisons."""
    from deepsearch.web.extract import html_to_text

    return html_to_text(page.html, page.url or "https://aeb.invalid/page", fallbacks=True).text


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
    """(scores, median CPU seconds a page, (F1, key) of every page in order)."""
    counts: list[tuple[float, float, float]] = []
    worst: list[tuple[float, str]] = []
    cpu: list[float] = []
    extractor(pages[0])  # one-time set-up (imports, compiled patterns) out of the timings
    for page in pages:
        started = time.process_time()
        text = extractor(page)
        cpu.append(time.process_time() - started)
        c = match(page.truth, text)
        counts.append(c)
        p, r = _precision(*c), _recall(*c)
        worst.append((2 * p * r / (p + r) if p + r else 0.0, page.key[:12]))
    return score(counts), statistics.median(cpu), worst


VARIANTS: list[tuple[str, Callable[[BenchPage], str]]] = [
    ("**deepsearch `Page.text`: exactly what the LLM reads** (`extract_body`)", reader_text),
    (
        "`Page.text` with trafilatura's readability/justext comparisons (before #21)",
        reader_text_with_fallbacks,
    ),
    ("trafilatura `extract()` defaults, plain text (the published setup)", trafilatura_txt),
    (
        "before: the reader's markdown with its syntax stripped afterwards",
        old_reader_markdown_plain,
    ),
]


def _measure(
    pages: list[BenchPage],
) -> tuple[list[str], dict[str, dict[str, float]], dict[str, list[tuple[float, str]]]]:
    """(table rows, each variant's scores, each variant's per-page F1) by function name."""
    rows, scores, per_page = [], {}, {}
    for label, extractor in VARIANTS:
        metrics, cpu_s, pages_f1 = evaluate(pages, extractor)
        scores[extractor.__name__], per_page[extractor.__name__] = metrics, pages_f1
        rows.append(
            f"| {label} | {metrics['precision']:.3f} | {metrics['recall']:.3f} | "
            f"**{metrics['f1']:.3f}** | {metrics['mean_page_f1']:.3f} | {cpu_s * 1000:.0f} |"
        )
    return rows, scores, per_page


def run() -> str:
    if not (DATA / "ground-truth.json").is_file():
        return (
            "## Extraction quality (AEB)\n\n"
            f"Skipped: `{DATA}` is not present. Reproduce with `{COMMAND}`.\n"
        )
    import trafilatura  # noqa: F401  (import cost kept out of the timings)

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    pages = load_pages()
    rows, scores, per_page = _measure(pages)
    mean_f1 = {name: s["mean_page_f1"] for name, s in scores.items()}
    ours, before = per_page["reader_text"], per_page["reader_text_with_fallbacks"]
    better = sum(a > b + 1e-9 for (a, _), (b, _) in zip(ours, before, strict=True))
    worse = sum(a < b - 1e-9 for (a, _), (b, _) in zip(ours, before, strict=True))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines = [
        "## Extraction quality (AEB)",
        "",
        f"Reproduce: `{COMMAND}`. {len(pages)} pages of the article-extraction-benchmark "
        "(`../shared/data/extraction_aeb`), scored with the upstream method: word 4-gram "
        "shingles, per-page precision and recall averaged, F1 from the averages "
        "(published: trafilatura 0.958, Readability.js 0.947). Target F1 ≥ 0.95.",
        "",
        "| extractor | precision | recall | F1 | mean per-page F1 | CPU ms a page (median) |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"Mean per-page F1 of the text the LLM reads: **{mean_f1['reader_text']:.3f}**, "
        f"trafilatura's plain default on the same pages: **{mean_f1['trafilatura_txt']:.3f}** "
        f"({'≥' if mean_f1['reader_text'] >= mean_f1['trafilatura_txt'] else '<'}; "
        "the target is ≥). The reader runs trafilatura once with links kept in its tree, "
        "takes the main content's link targets from it, then renders the tree as plain "
        "text with the links dissolved (anchor text kept) and tables one row a line. "
        "It runs trafilatura's `fast` mode: its readability and justext comparisons "
        f"(second row) change {better + worse} pages ({better} better without them, "
        f"{worse} worse) for about a third of a page's CPU and justext's stoplist "
        "(~0.1 s a process). Title and date come from trafilatura's and htmldate's "
        "functions for those two fields only (no public-suffix list).",
        "",
        f"Peak RSS of the whole run: {peak_mb:.0f} MB (before loading pages: "
        f"{rss_before / 1024:.0f} MB). CPU a page: the median of the process's CPU time "
        "(user+sys) over each page's extraction, single-threaded, after one page outside "
        f"the timings (load average {os.getloadavg()[0]:.1f} when the run ended); the "
        "reader runs it in a worker thread, one page at a time per fetch.",
        "",
        "Lowest per-page F1 (`Page.text`): "
        + ", ".join(f"`{key}` {f1:.2f}" for f1, key in sorted(ours)[:5]),
    ]
    return "\n".join(lines) + "\n"
