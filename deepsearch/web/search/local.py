"""The `local` provider: BM25 search over a folder of .md, .txt, .html and .pdf files.

* Documents are split into passages of about 800 characters; BM25 (bm25s) ranks the
  passages, each document scores by its best passage, and the snippet is the ~300
  characters of that passage around the first query term.
* The index is persisted under `<cache dir>/corpus-index/<hash of the corpus path>/
  <fingerprint>/`; the fingerprint hashes every file's relative path, size and
  mtime, so any added, removed or edited file triggers a rebuild. A build is written
  to a temporary folder and renamed into place, so two runs never see half an index.
* Results carry `file:///abs/path` URLs. `LocalCorpusReader.read(url)` (and
  `read_local`) turns such a URL back into a `Page`, only for files inside the
  corpus folder: a `file://` URL the model makes up cannot read anything else.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from deepsearch.errors import ConfigError
from deepsearch.web.search.base import clean_text
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
MAX_FILE_BYTES = 50 * 1024 * 1024
PASSAGE_CHARS = 800
SNIPPET_CHARS = 300
_INDEX_FORMAT = 1


# ----------------------------------------------------------------- extraction


def _title_from_markdown(text: str) -> str:
    match = re.search(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


def _extract_html(raw: str) -> tuple[str, str]:
    """The web reader's extraction (same caps and fallbacks), with the <title> text."""
    from deepsearch.web.extract import html_to_text

    match = re.search(r"<title[^>]*>(.*?)</title>", raw, re.IGNORECASE | re.DOTALL)
    title = clean_text(match.group(1)) if match else ""
    return title, html_to_text(raw).text


def _extract_pdf(path: Path) -> tuple[str, str]:
    from deepsearch.web.extract import pdf_to_text

    got = pdf_to_text(path.read_bytes())
    return got.title, got.text


def extract_document(path: Path) -> tuple[str, str]:
    """(title, text) of one corpus file; the title falls back to the file name."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        title, text = _extract_pdf(path)
    else:
        raw = path.read_bytes().decode("utf-8", errors="replace")
        if suffix in (".html", ".htm"):
            title, text = _extract_html(raw)
        elif suffix == ".txt":
            title, text = "", raw
        else:  # markdown: the plain text a reader sees, as for web pages
            from deepsearch.web.extract import markdown_to_plain

            title, text = _title_from_markdown(raw), markdown_to_plain(raw)
    return title or path.stem.replace("_", " ").replace("-", " "), text


def split_passages(text: str, size: int = PASSAGE_CHARS) -> list[str]:
    """Paragraph-packed passages of about `size` characters (long paragraphs cut)."""
    passages: list[str] = []
    current = ""
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(para.split())
        if not para:
            continue
        if current and len(current) + len(para) + 1 > size:
            passages.append(current)
            current = ""
        while len(para) > size:
            cut = para.rfind(" ", 0, size)
            cut = cut if cut > size // 2 else size
            passages.append(para[:cut].strip())
            para = para[cut:].strip()
        current = f"{current} {para}".strip()
    if current:
        passages.append(current)
    return passages


def best_snippet(passage: str, terms: list[str], size: int = SNIPPET_CHARS) -> str:
    """About `size` characters of `passage`, starting a little before the first term."""
    if len(passage) <= size:
        return passage
    lowered = passage.lower()
    hits = [i for i in (lowered.find(t) for t in terms if t) if i >= 0]
    first = min(hits) if hits else 0
    start = max(0, first - size // 4)
    sentence = max(passage.rfind(". ", start, first), passage.rfind("\n", start, first))
    if sentence >= 0:  # begin at the sentence holding the first hit
        start = sentence + 1
    elif start > 0:
        space = passage.find(" ", start)
        start = space + 1 if 0 <= space < first else start
    while start < len(passage) and passage[start].isspace():
        start += 1
    end = min(len(passage), start + size)
    if end < len(passage):
        space = passage.rfind(" ", start, end)
        end = space if space > start + size // 2 else end
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(passage) else ""
    return f"{prefix}{passage[start:end].strip()}{suffix}"


# ----------------------------------------------------------------- the corpus


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class LocalCorpus:
    """A folder of documents with a persisted, self-refreshing BM25 index."""

    def __init__(self, corpus_dir: str | Path, *, index_root: str | Path | None = None) -> None:
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
        self._lock = threading.Lock()
        self._loaded: tuple[str, Any, list[list[Any]], list[dict[str, str]]] | None = None

    # -- files
    def files(self) -> list[Path]:
        found = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if name.startswith(".") or path.suffix.lower() not in CONTENT_TYPES:
                    continue
                # A symlink pointing outside the folder must not leak into snippets.
                if not path.resolve().is_relative_to(self.root):
                    continue
                found.append(path)
        return found

    def require_documents(self) -> None:
        """ConfigError naming the folder when it holds nothing to index: searching an
        empty corpus would only burn the budget on queries that cannot find anything."""
        if not self.files():
            kinds = ", ".join(sorted(CONTENT_TYPES))
            raise ConfigError(f"--corpus {self.root}: no files to index (looked for {kinds})")

    def fingerprint(self) -> str:
        rows = []
        for path in self.files():
            st = path.stat()
            rows.append([str(path.relative_to(self.root)), st.st_size, st.st_mtime_ns])
        blob = json.dumps([_INDEX_FORMAT, rows])
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    # -- index
    def _build(self, target: Path) -> None:
        import bm25s

        docs: list[dict[str, str]] = []
        passages: list[list[Any]] = []
        for path in self.files():
            if path.stat().st_size > MAX_FILE_BYTES:
                log.warning("corpus: skipping %s (larger than %d bytes)", path.name, MAX_FILE_BYTES)
                continue
            try:
                title, text = extract_document(path)
            except Exception as exc:  # one unreadable file must not sink the corpus
                log.warning("corpus: cannot read %s (%s)", path.name, type(exc).__name__)
                continue
            doc_id = len(docs)
            docs.append({"path": str(path), "title": title})
            passages.extend([doc_id, p] for p in split_passages(text))
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=self.index_home))
        try:
            if passages:
                retriever = bm25s.BM25()
                tokens = bm25s.tokenize(
                    [p[1] for p in passages], stopwords="en", show_progress=False
                )
                retriever.index(tokens, show_progress=False)
                retriever.save(str(tmp / "bm25"), show_progress=False)
            (tmp / "passages.json").write_text(json.dumps(passages), encoding="utf-8")
            (tmp / "docs.json").write_text(json.dumps(docs), encoding="utf-8")
            try:
                tmp.rename(target)
            except OSError:  # another run renamed its identical build first
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _load(self, target: Path, fp: str) -> None:
        import bm25s

        passages = json.loads((target / "passages.json").read_text(encoding="utf-8"))
        docs = json.loads((target / "docs.json").read_text(encoding="utf-8"))
        retriever = None
        if passages:
            retriever = bm25s.BM25.load(str(target / "bm25"), show_progress=False)
        self._loaded = (fp, retriever, passages, docs)

    def _prune(self, keep: str) -> None:
        for child in self.index_home.iterdir():
            if child.name != keep and not child.name.startswith(".build-"):
                shutil.rmtree(child, ignore_errors=True)

    def ensure_index(self) -> None:
        """Load the index for the current files, building it first if needed."""
        with self._lock:
            fp = self.fingerprint()
            if self._loaded is not None and self._loaded[0] == fp:
                return
            self.index_home.mkdir(parents=True, exist_ok=True)
            target = self.index_home / fp
            if (target / "docs.json").is_file():
                try:
                    self._load(target, fp)
                    self.last_index_event = "loaded"
                    return
                except Exception as exc:  # damaged on disk: build it again
                    log.warning("corpus index unreadable (%s); rebuilding", type(exc).__name__)
                    shutil.rmtree(target, ignore_errors=True)
            self._build(target)
            self.last_index_event = "built"
            self._prune(keep=fp)
            self._load(target, fp)

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
            return ReadFailure(url=url, kind="too_large", detail=f"over {MAX_FILE_BYTES} bytes")
        try:
            title, text = extract_document(path)
        except Exception as exc:
            return ReadFailure(url=url, kind="extract", detail=f"{type(exc).__name__}: {exc}"[:300])
        if not text.strip():
            return ReadFailure(url=url, kind="empty", detail="no text in the document")
        return Page(
            url=url,
            final_url=path.as_uri(),
            title=title,
            text=text,
            content_type=CONTENT_TYPES[path.suffix.lower()],
            fetched_at=_now_iso(),
        )


class LocalSearch:
    """SearchProvider over a LocalCorpus (no network; BM25 runs in a worker thread)."""

    name = "local"
    supports_site_operator = False

    def __init__(self, corpus: LocalCorpus) -> None:
        self.corpus = corpus

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        return await asyncio.to_thread(self.corpus.search, query)


class LocalCorpusReader:
    """Reader for the corpus's `file://` URLs; route `file://` URLs here."""

    def __init__(self, corpus: LocalCorpus) -> None:
        self.corpus = corpus

    async def read(self, url: str) -> Page | ReadFailure:
        return await asyncio.to_thread(self.corpus.read, url)


def is_local_url(url: str) -> bool:
    return url.lower().startswith("file:")


async def read_local(url: str, corpus: LocalCorpus) -> Page | ReadFailure:
    """Read one corpus document back as a Page, or a typed failure."""
    return await asyncio.to_thread(corpus.read, url)
