"""The HTML extractor's imports, started beside the first fetch instead of after it.

trafilatura and lxml take ~0.2 s of CPU to import on a quiet machine (more under
load). Imported on first use, that cost sat on the critical path of the first page
read, after its bytes had arrived; started in a daemon thread when the first fetch
begins, it overlaps the network wait. A failure is left for the extraction itself
to report (as one line).
"""

from __future__ import annotations

import threading

MODULES = ("lxml.html", "trafilatura", "trafilatura.xml")


def import_extractors() -> None:
    import importlib

    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: S112 - extract_body reports a missing parser
            continue


def start() -> threading.Thread:
    thread = threading.Thread(target=import_extractors, name="extractor-import", daemon=True)
    thread.start()
    return thread
