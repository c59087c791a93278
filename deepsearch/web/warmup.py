"""The HTML extractor's one-time costs, paid beside the first fetch instead of after it.

trafilatura and lxml take ~0.25 s of CPU to import on a quiet machine, and the first
extraction of a process some 0.03 s more (trafilatura's and htmldate's compiled
patterns and lookups). Paid on first use, that sat on the critical path of the first
page read, after its bytes had arrived. Started in a daemon thread when the first
fetch begins (a fetch is only made for a page a visit is about to read), it overlaps
the network wait: the imports, then one extraction of a tiny page. A failure is left
for the extraction itself to report (as one line). Each extraction the reader makes
waits for the warm-up first (`ensure`): the reads of one visit extract in parallel
threads, and each would otherwise pay the same first-use costs.

What the extraction no longer does (web/extract.py) costs nothing here: justext's
every-language stoplist (~0.1 s, its fallback is off) and the public-suffix list
(~0.13 s, trafilatura's hostname field, not asked for).
"""

from __future__ import annotations

import threading

MODULES = ("lxml.html", "trafilatura", "trafilatura.metadata", "trafilatura.xml", "htmldate")
_LOCK = threading.Lock()
_DONE: list[bool] = []  # [True] once the warm-up has run in this process
# A tiny article with a link, a title and a date in its metadata (htmldate).
SAMPLE_URL = "https://www.abc.example/warm-up"
SAMPLE = (
    '<!doctype html><html lang="en"><head><title>Warm-up</title>'
    '<meta property="article:published_time" content="2024-01-02"></head>'
    '<body><nav><a href="/">Home</a></nav><article><h1>Warm-up</h1>'
    '<p>A short paragraph, and <a href="/other">a link</a>.</p></article></body></html>'
)


def import_extractors() -> None:
    import importlib

    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: S112 - extract_body reports a missing parser
            continue


def ensure() -> None:
    """The warm-up, once a process: run here, or awaited if a thread is running it."""
    with _LOCK:
        if not _DONE:
            warm_up()
            _DONE.append(True)


def warm_up() -> None:
    """The imports, then one throw-away extraction: every one-time set-up is done."""
    import_extractors()
    try:
        from deepsearch.web.extract import html_to_text

        html_to_text(SAMPLE, SAMPLE_URL)
    except Exception:  # noqa: S110 - a real page's extraction reports its own failure
        pass


def start() -> threading.Thread:
    thread = threading.Thread(target=ensure, name="extractor-warm-up", daemon=True)
    thread.start()
    return thread
