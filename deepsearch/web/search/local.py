"""The `local` provider: BM25 search over a folder of .md, .txt, .html and .pdf files.

* Documents are split into passages of about 800 characters; BM25 (bm25s) ranks the
  passages, each document scores by its best passage, and the snippet is the ~300
  characters of that passage around the first query term.
* The index is persisted under `<cache dir>/corpus-index/<hash of the corpus path>/
  <fingerprint>/`; the fingerprint hashes every file's relative path, size and
  mtime, so any added, removed or edited file triggers a rebuild. A build is written
  to a temporary folder and renamed into place, so two runs never see half an index.
* Each file's extracted passages are kept in `.files/` keyed by path, size and mtime:
  a rebuild reads (decodes, parses) only the files that changed; the others are reused.
* Encodings are detected and binary files skipped (counted): see local_files.py.
  `on_progress` hears of every file read (files and bytes done of the total).
* Results carry `file:///abs/path` URLs. `read_local(url, corpus)` turns such a URL
  back into a `Page`, only for files inside the corpus folder: a `file://` URL the
  model makes up cannot read anything else.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from deepsearch.clock import Clock, SystemClock
from deepsearch.errors import ConfigError
from deepsearch.files import describe, write_atomic
from deepsearch.web.search.local_files import (
    best_snippet,
    extract_document,
    split_passages,
    utf8_name,
)
from deepsearch.web.search.local_progress import MAX_FILE_BYTES, IndexProgress, human_size
from deepsearch.web.search.local_store import (
    SUMMARY_FILE,
    bm25_index,
    load_index,
    prune_index,
    save_index,
)
from deepsearch.web.types import Page, ReadFailure, SearchQuery, SearchResult

log = logging.getLogger(__name__)

CONTENT_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
}
_INDEX_FORMAT = 3  # 2: encodings detected, binary files skipped; 3: empty files, .txt titles
FILE_CACHE = ".files"
__all__ = ["MAX_FILE_BYTES", "IndexProgress", "LocalCorpus"]


ProgressFn = Callable[[IndexProgress], None]
Extracted = tuple[str, list[str]] | str  # (title, passages), or why the file is skipped


# ----------------------------------------------------------------- the corpus


class LocalCorpus:
    """A folder of documents with a persisted, self-refreshing BM25 index."""

    def __init__(
        self,
        corpus_dir: str | Path,
        *,
        index_root: str | Path | None = None,
        on_progress: ProgressFn | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._clock = clock or SystemClock()
        root = Path(corpus_dir).expanduser()
        if not root.is_dir():
            raise ConfigError(f"--corpus: {root} is not a directory")
        self.root = root.resolve()
        if index_root is None:
            from deepsearch.web.cache import default_cache_dir

            index_root = default_cache_dir() / "corpus-index"
        path_hash = hashlib.sha256(str(self.root).encode()).hexdigest()[:16]
        self.index_home = Path(index_root) / path_hash
        self.last_index_event: str = ""  # "built" or "loaded" (for tests and doctor)
        self.on_progress = on_progress
        self.last_build: IndexProgress | None = None  # what the last build did
        self._lock = threading.Lock()
        self._loaded: tuple[str, Any, list[list[Any]], list[dict[str, str]]] | None = None
        self.bad_names = 0  # files and folders skipped by the last files(): names not UTF-8

    # -- files
    def files(self) -> list[Path]:
        """The documents under the folder, in a stable order. A file or folder whose
        name is not UTF-8 (it could never be a URL, a cache key or a JSON string) is
        skipped and counted in `bad_names`."""
        found = []
        self.bad_names = 0
        for dirpath, dirnames, filenames in os.walk(self.root):
            kept = sorted(d for d in dirnames if not d.startswith("."))
            dirnames[:] = [d for d in kept if utf8_name(d)]
            self.bad_names += len(kept) - len(dirnames)
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if name.startswith(".") or path.suffix.lower() not in CONTENT_TYPES:
                    continue
                if not utf8_name(name):
                    self.bad_names += 1
                    log.info("corpus: skipping a file whose name is not UTF-8 in %s", dirpath)
                    continue
                # A symlink pointing outside the folder must not leak into snippets.
                if not path.resolve().is_relative_to(self.root):
                    continue
                found.append(path)
        return found

    def require_documents(self) -> int:
        """Index now; the number of documents. ConfigError naming the folder when it
        holds nothing indexable: searching an empty corpus would only burn the budget."""
        kinds = ", ".join(sorted(CONTENT_TYPES))
        if not self.files():
            raise ConfigError(f"--corpus {self.root}: no files to index (looked for {kinds})")
        count = self.document_count()
        if count == 0:
            raise ConfigError(
                f"--corpus {self.root}: no indexable text in its files (binary or empty)"
            )
        return count

    def document_count(self) -> int:
        """Documents in the (current) index, building it if needed."""
        self.ensure_index()
        assert self._loaded is not None
        return len(self._loaded[3])

    def fingerprint(self) -> str:
        rows = []
        for path in self.files():
            st = path.stat()
            rows.append([str(path.relative_to(self.root)), st.st_size, st.st_mtime_ns])
        blob = json.dumps([_INDEX_FORMAT, rows])
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    # -- index
    def _file_passages(self, path: Path, cache_dir: Path) -> tuple[Extracted, bool]:
        """(title, passages) of one file — or why it is not indexed ("binary",
        "unreadable", "too large") — and whether it came from the cache (unchanged)."""
        st = path.stat()
        if st.st_size > MAX_FILE_BYTES:
            # The summary line counts it (and --quiet means nothing on stderr).
            log.info("corpus: skipping %s (over %s)", path.name, human_size(MAX_FILE_BYTES))
            return "too large", False
        rel = str(path.relative_to(self.root))
        stamp = [_INDEX_FORMAT, rel, st.st_size, st.st_mtime_ns]
        cached = cache_dir / (hashlib.sha256(rel.encode()).hexdigest()[:24] + ".json")
        try:
            entry = json.loads(cached.read_text(encoding="utf-8"))
            if entry.get("stamp") == stamp:
                kept = entry["result"]
                return (kept if isinstance(kept, str) else (kept[0], list(kept[1]))), True
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            pass  # no (usable) cache entry: read the file
        try:
            got = extract_document(path)
        except Exception as exc:  # one unreadable file must not sink the corpus
            log.warning("corpus: cannot read %s (%s)", path.name, type(exc).__name__)
            return "unreadable", False
        result: Extracted = "binary" if got is None else (got[0], split_passages(got[1]))
        if not isinstance(result, str) and not result[1]:
            result = "empty"  # no text at all: not a document
        # Written aside and renamed: a concurrent run never reads half an entry; a cache
        # that cannot be written only means the file is read again next time.
        with contextlib.suppress(OSError):
            write_atomic(cached, json.dumps({"stamp": stamp, "result": result}))
        return result, False

    def _gather(
        self, cache_dir: Path
    ) -> tuple[list[dict[str, str]], list[list[Any]], IndexProgress]:
        files = self.files()
        sizes = [p.stat().st_size for p in files]
        read = sum(s for s in sizes if s <= MAX_FILE_BYTES)  # a skipped file is not read
        progress = IndexProgress(files_total=len(files), bytes_total=read, bad_names=self.bad_names)
        docs: list[dict[str, str]] = []
        passages: list[list[Any]] = []
        for path, size in zip(files, sizes, strict=True):
            got, reused = self._file_passages(path, cache_dir)
            progress.reused += reused
            progress.files_done += 1
            progress.bytes_done += size if got != "too large" else 0
            if got == "binary":
                progress.binary_skipped += 1
            elif got == "too large":
                progress.too_large += 1
                progress.too_large_bytes += size
            elif got == "empty":
                progress.empty += 1
            elif isinstance(got, str):
                progress.unreadable += 1
            else:
                doc_id = len(docs)
                docs.append({"path": str(path), "title": got[0]})
                passages.extend([doc_id, p] for p in got[1])
            self._report(progress)
        progress.documents = len(docs)
        return docs, passages, progress

    def _report(self, progress: IndexProgress) -> None:
        if self.on_progress is not None:
            try:
                self.on_progress(progress.model_copy())
            except Exception:  # a display problem must not stop indexing
                pass

    def _report_unchanged(self, target: Path) -> None:
        """The summary line of a run that reused the index: what its build found."""
        try:
            built = IndexProgress.model_validate_json((target / SUMMARY_FILE).read_text("utf-8"))
        except (OSError, ValueError):  # an index from before the summary was kept
            built = IndexProgress(documents=len(self._loaded[3]) if self._loaded else 0)
        self._report(built.model_copy(update={"finished": True, "unchanged": True}))

    def _build(self, target: Path, fp: str) -> None:
        """Build the index (in memory, then saved under `target`). A save that fails (a
        full disk, a read-only cache folder) keeps it in memory for this run, said once
        naming the folder and the cause: the run goes on."""
        cache_dir = self.index_home / FILE_CACHE
        with contextlib.suppress(OSError):  # no cache folder: every file is read
            cache_dir.mkdir(parents=True, exist_ok=True)
        docs, passages, progress = self._gather(cache_dir)
        retriever = bm25_index(passages)
        progress.finished = True
        try:
            save_index(self.index_home, target, retriever, passages, docs, progress)
        except OSError as exc:
            log.warning("corpus index not saved (%s); kept in memory for this run", describe(exc))
        self._loaded = (fp, retriever, passages, docs)
        self.last_build = progress
        self._report(progress)

    def ensure_index(self) -> None:
        """Load the index for the current files, building it first if needed."""
        with self._lock:
            fp = self.fingerprint()
            if self._loaded is not None and self._loaded[0] == fp:
                return
            target = self.index_home / fp
            if (target / "docs.json").is_file():
                try:
                    self._loaded = (fp, *load_index(target))
                    self.last_index_event = "loaded"
                    self._report_unchanged(target)
                    return
                except Exception as exc:  # damaged on disk: build it again
                    log.warning(
                        "corpus index at %s unreadable (%s: %s); rebuilding it",
                        target, type(exc).__name__, exc,
                    )  # fmt: skip
                    shutil.rmtree(target, ignore_errors=True)
            self._build(target, fp)
            self.last_index_event = "built"
            prune_index(self.index_home, keep={fp, FILE_CACHE})

    def search(self, query: SearchQuery) -> list[SearchResult]:
        import bm25s

        self.ensure_index()
        assert self._loaded is not None
        _, retriever, passages, docs = self._loaded
        if retriever is None or not query.q.strip():
            return []
        q_tokens = bm25s.tokenize([query.q], stopwords="en", return_ids=False, show_progress=False)
        k = min(len(passages), max(query.limit * 5, 20))
        ids, scores = retriever.retrieve(q_tokens, k=k, show_progress=False)
        results: list[SearchResult] = []
        seen_docs: set[int] = set()
        for pid, score in zip(ids[0], scores[0], strict=True):
            if score <= 0:
                break
            doc_id, text = passages[int(pid)]
            if doc_id in seen_docs:
                continue
            seen_docs.add(doc_id)
            doc = docs[doc_id]
            results.append(
                SearchResult(
                    title=doc["title"],
                    url=Path(doc["path"]).as_uri(),
                    snippet=best_snippet(text, q_tokens[0]),
                    provider="local",
                )
            )
            if len(results) >= query.limit:
                break
        return results

    # -- reading
    def path_for(self, url: str) -> Path | ReadFailure:
        parts = urlsplit(url)
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            return ReadFailure(url=url, kind="invalid_url", detail="not a file:// URL")
        path = Path(unquote(parts.path))
        try:
            resolved = path.resolve()
        except OSError:
            return ReadFailure(url=url, kind="invalid_url", detail="bad path")
        if not resolved.is_relative_to(self.root):
            return ReadFailure(url=url, kind="blocked", detail="outside the corpus folder")
        if resolved.suffix.lower() not in CONTENT_TYPES:
            return ReadFailure(url=url, kind="unsupported_type", detail=resolved.suffix or "none")
        if not resolved.is_file():
            return ReadFailure(url=url, kind="http_status", status=404, detail="no such document")
        return resolved

    def read(self, url: str) -> Page | ReadFailure:
        path = self.path_for(url)
        if isinstance(path, ReadFailure):
            return path
        if path.stat().st_size > MAX_FILE_BYTES:
            cap = human_size(MAX_FILE_BYTES)
            return ReadFailure(url=url, kind="too_large", detail=f"over the {cap} cap")
        try:
            got = extract_document(path)
        except Exception as exc:
            return ReadFailure(url=url, kind="extract", detail=f"{type(exc).__name__}: {exc}"[:300])
        if got is None:
            return ReadFailure(url=url, kind="unsupported_type", detail="binary file")
        title, text = got
        if not text.strip():
            return ReadFailure(url=url, kind="empty", detail="no text in the document")
        return Page(
            url=url,
            final_url=path.as_uri(),
            title=title,
            text=text,
            content_type=CONTENT_TYPES[path.suffix.lower()],
            fetched_at=self._clock.now().isoformat(timespec="seconds"),
        )


class LocalSearch:
    """SearchProvider over a LocalCorpus (no network; BM25 runs in a worker thread)."""

    name = "local"
    supports_site_operator = False

    def __init__(self, corpus: LocalCorpus) -> None:
        self.corpus = corpus

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        return await asyncio.to_thread(self.corpus.search, query)


async def read_local(url: str, corpus: LocalCorpus) -> Page | ReadFailure:
    """Read one corpus document back as a Page, or a typed failure."""
    return await asyncio.to_thread(corpus.read, url)
