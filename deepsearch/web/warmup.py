"""The HTML extractor's one-time costs, paid beside the first fetch instead of after it.

trafilatura and lxml take ~0.2 s of CPU to import on a quiet machine, and the first
extraction of a process ~0.4 s more: justext's stoplist (every language's, ~150k
words, built on trafilatura's first short page), the public-suffix list behind a
page's domain, readability's and htmldate's own set-up. Paid on first use, that sat
on the critical path of the first page read, after its bytes had arrived. Started in
a daemon thread when the first fetch begins (a fetch is only made for a page a visit
is about to read), it overlaps the network wait: the imports, then one extraction of
a tiny page that takes every one of those paths. A failure is left for the
extraction itself to report (as one line). Each extraction the reader makes waits
for the warm-up first (`ensure`): the reads of one visit extract in parallel
threads, and each would otherwise build the same stoplist again.
"""

from __future__ import annotations

import threading
from pathlib import Path

MODULES = ("lxml.html", "trafilatura", "trafilatura.xml")
# justext's every-language stoplist as trafilatura builds it, read from one file
# (tools/justext_stoplist.py writes it): ~0.1 s of CPU against ~0.3 s for ~100 files.
STOPLIST = Path(__file__).resolve().parent / "data" / "justext-stoplist.txt.gz"
_LOCK = threading.Lock()
_DONE: list[bool] = []  # [True] once the warm-up has run in this process
# Short (trafilatura falls back to justext under 250 characters), with a URL whose
# host courlan's quick pattern does not take (a name of 3 letters, as bbc.co.uk, or
# an address with a port: the public-suffix list is loaded; .example is reserved)
# and a date in its metadata (htmldate).
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


def preset_stoplist() -> bool:
    """trafilatura's justext stoplist from the shipped file, when it was written for
    the installed justext (else trafilatura builds its own, as it always did)."""
    import gzip
    from importlib.metadata import version

    try:
        from trafilatura import external

        if external.JT_STOPLIST is not None:
            return True
        header, *words = gzip.decompress(STOPLIST.read_bytes()).decode("utf-8").split("\n")
        if header != f"justext {version('justext')}":
            return False
        external.JT_STOPLIST = tuple(words)  # type: ignore[assignment]  # None until built
        return True
    except Exception:  # a missing or damaged file: trafilatura builds the stoplist
        return False


def warm_up() -> None:
    """The imports, then one throw-away extraction: every one-time set-up is done."""
    import_extractors()
    preset_stoplist()
    try:
        from deepsearch.web.extract import html_to_text

        html_to_text(SAMPLE, SAMPLE_URL)
    except Exception:  # noqa: S110 - a real page's extraction reports its own failure
        pass


def start() -> threading.Thread:
    thread = threading.Thread(target=ensure, name="extractor-warm-up", daemon=True)
    thread.start()
    return thread
