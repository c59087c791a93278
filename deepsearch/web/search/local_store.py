"""The corpus index on disk (`LocalCorpus`'s): built in memory, saved to a `.build-*`
folder and renamed into place (no run ever sees half an index), loaded and checked
(valid JSON of the wrong shape is rebuilt, not an IndexError on every later search),
and pruned (older indexes, and a `.build-*` folder a killed build left behind once it
is older than any build in progress could be)."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from deepsearch.web.search.local_progress import IndexProgress

BUILD_PREFIX = ".build-"  # a build in progress, renamed into place when written
STALE_BUILD_S = 3600.0  # a .build-* folder this old was left by a killed build
SUMMARY_FILE = "summary.json"  # the build's IndexProgress: the summary of a reused index

Passages = list[list[Any]]  # [document number, text]
Docs = list[dict[str, str]]  # {"path", "title"}


def bm25_index(passages: Passages) -> Any:
    """The BM25 retriever over the passages' text (None for no passage at all)."""
    if not passages:
        return None
    import bm25s

    retriever = bm25s.BM25()
    tokens = bm25s.tokenize([p[1] for p in passages], stopwords="en", show_progress=False)
    retriever.index(tokens, show_progress=False)
    return retriever


def save_index(
    home: Path, target: Path, retriever: Any, passages: Passages, docs: Docs, done: IndexProgress
) -> None:
    """Write the index to a `.build-*` folder under `home`, then rename it to `target`;
    an OSError (a full disk, a read-only folder) leaves nothing behind."""
    home.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=BUILD_PREFIX, dir=home))
    try:
        if retriever is not None:
            retriever.save(str(tmp / "bm25"), show_progress=False)
        (tmp / "passages.json").write_text(json.dumps(passages), encoding="utf-8")
        (tmp / "docs.json").write_text(json.dumps(docs), encoding="utf-8")
        (tmp / SUMMARY_FILE).write_text(done.model_dump_json(), encoding="utf-8")
        try:
            tmp.rename(target)
        except OSError:  # another run renamed its identical build first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_index(target: Path) -> tuple[Any, Passages, Docs]:
    """(retriever, passages, docs) saved under `target`; ValueError (or OSError) for an
    index that cannot be used as it is."""
    passages = json.loads((target / "passages.json").read_text(encoding="utf-8"))
    docs = json.loads((target / "docs.json").read_text(encoding="utf-8"))
    check_index_shape(passages, docs)
    retriever = None
    if passages:
        import bm25s

        retriever = bm25s.BM25.load(str(target / "bm25"), show_progress=False)
    return retriever, passages, docs


def prune_index(home: Path, keep: set[str]) -> None:
    """Remove every entry of `home` but `keep`'s, and stale `.build-*` folders."""
    stale = time.time() - STALE_BUILD_S
    with contextlib.suppress(OSError):
        for child in home.iterdir():
            if child.name.startswith(BUILD_PREFIX):
                with contextlib.suppress(OSError):
                    if child.stat().st_mtime < stale:
                        shutil.rmtree(child, ignore_errors=True)
            elif child.name not in keep:
                shutil.rmtree(child, ignore_errors=True)


def check_index_shape(passages: Any, docs: Any) -> None:
    """ValueError unless `docs` is a list of {"path", "title"} and `passages` a list of
    [document number, text] pairs naming those documents."""
    if not isinstance(docs, list) or not isinstance(passages, list):
        raise ValueError("the index files are not lists")
    for doc in docs:
        if not (isinstance(doc, dict) and isinstance(doc.get("path"), str)):
            raise ValueError("a document entry has no path")
        if not isinstance(doc.get("title"), str):
            raise ValueError("a document entry has no title")
    for entry in passages:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], str)):
            raise ValueError("a passage entry is not [document, text]")
        if not (isinstance(entry[0], int) and 0 <= entry[0] < len(docs)):
            raise ValueError("a passage names no document of the index")
