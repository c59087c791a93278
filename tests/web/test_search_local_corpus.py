"""Local corpus edges (issue 10, item 6): encodings, binary files, progress, re-reading
only changed files, empty folders, the corpus fused with the web, paths for display."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from deepsearch.errors import ConfigError
from deepsearch.frontend.options import providers as _providers
from deepsearch.frontend.output import display_path, paths_in_text
from deepsearch.runtime import corpus_progress, index_summary
from deepsearch.web.search import build_search
from deepsearch.web.search import local as local_module
from deepsearch.web.search.chain import SearchChain
from deepsearch.web.search.fused import FusedSearch, reciprocal_rank_fusion
from deepsearch.web.search.local import IndexProgress, LocalCorpus, LocalSearch
from deepsearch.web.search.local_files import decode_text
from deepsearch.web.types import SearchQuery, SearchResult
from tests.fakes.scripted_llm import offline_settings
from tests.web.test_search_chain import Scripted, err

CAFE = "Le café de la gare sert une crème brûlée à Noël; the owner is Zoë Müller."


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "latin1.txt").write_bytes(CAFE.encode("latin-1"))
    (root / "utf16.md").write_bytes(
        ("# Tides\n\nThe tide at Saint-Malo reaches 13 metres.").encode("utf-16")
    )
    (root / "plain.md").write_text("# Magma\n\nMagma rises through the crust.", encoding="utf-8")
    (root / "noise.txt").write_bytes(random.Random(7).randbytes(20_000))
    return root


def corpus(root: Path, tmp_path: Path, **kw: object) -> LocalCorpus:
    return LocalCorpus(root, index_root=tmp_path / "index", **kw)  # type: ignore[arg-type]


def test_encodings_are_detected() -> None:
    assert decode_text(CAFE.encode("latin-1")) == CAFE
    assert decode_text(CAFE.encode("cp1252")) == CAFE
    assert decode_text(CAFE.encode("utf-16")) == CAFE
    assert decode_text(CAFE.encode("utf-8")) == CAFE
    assert decode_text(random.Random(1).randbytes(5000)) is None
    assert decode_text(bytes(range(1, 32)) * 100) is None  # valid UTF-8, still not text
    assert decode_text(b"PK\x03\x04\x00\x00" + bytes(range(256)) * 4) is None
    # A short note whose heading hides terminal escapes is still a note (they are
    # stripped when printed), not a binary file.
    note = "# Tides\x1b]0;pwned\x07\x1b[2J\n\nThe tide rose 13 metres.\n"
    assert decode_text(note.encode()) == note
    assert decode_text(b"text\x00" * 200) is None


def test_latin1_and_utf16_are_indexed_as_text_and_noise_is_skipped(
    notes: Path, tmp_path: Path
) -> None:
    c = corpus(notes, tmp_path)
    found = c.search(SearchQuery(q="crème brûlée Noël"))
    assert found and found[0].url.endswith("latin1.txt") and "brûlée" in found[0].snippet
    tides = c.search(SearchQuery(q="tide Saint-Malo metres"))
    assert tides[0].title == "Tides" and "13 metres" in tides[0].snippet
    assert c.last_build is not None
    assert c.last_build.binary_skipped == 1 and c.last_build.documents == 3
    assert not any(r.url.endswith("noise.txt") for r in c.search(SearchQuery(q="a e i o u")))


def test_progress_counts_files_and_bytes(notes: Path, tmp_path: Path) -> None:
    seen: list[IndexProgress] = []
    corpus(notes, tmp_path, on_progress=seen.append).ensure_index()
    total = sum(p.stat().st_size for p in notes.iterdir())
    assert [p.files_done for p in seen if not p.finished] == [1, 2, 3, 4]
    assert seen[-1].finished and seen[-1].bytes_done == seen[-1].bytes_total == total
    summary = index_summary(seen[-1])
    assert summary.startswith("corpus: 3 documents indexed from 4 files")
    assert "1 binary file skipped" in summary


def test_only_changed_files_are_read_again(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus(notes, tmp_path).ensure_index()
    read: list[str] = []
    real = local_module.extract_document

    def counting(path: Path) -> object:
        read.append(path.name)
        return real(path)

    monkeypatch.setattr(local_module, "extract_document", counting)
    plain = notes / "plain.md"
    plain.write_text("# Magma\n\nMagma and basalt rise through the crust.", encoding="utf-8")
    os.utime(plain, ns=(plain.stat().st_atime_ns, plain.stat().st_mtime_ns + 10**9))
    again = corpus(notes, tmp_path)
    assert again.search(SearchQuery(q="basalt"))[0].url.endswith("plain.md")
    assert again.last_index_event == "built" and read == ["plain.md"]
    assert again.last_build is not None and again.last_build.reused == 3


def test_a_folder_without_indexable_text_is_a_configuration_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="no files to index"):
        corpus(empty, tmp_path).require_documents()
    (empty / "noise.txt").write_bytes(random.Random(3).randbytes(4000))
    with pytest.raises(ConfigError, match="no indexable text") as info:
        corpus(empty, tmp_path).require_documents()
    assert str(empty) in str(info.value)


def test_corpus_progress_becomes_view_events() -> None:
    events: list[object] = []
    report = corpus_progress(events.append)
    report(IndexProgress(files_done=1, files_total=2, bytes_done=1500, bytes_total=3000))
    report(IndexProgress(files_done=2, files_total=2, documents=2, finished=True))
    kinds = [e.kind for e in events]
    assert kinds == ["activity", "activity", "notice"]
    assert events[0].detail == "1/2 files, 1.5 kB/3.0 kB"


def r(url: str) -> SearchResult:
    return SearchResult(title=url, url=url, provider="x")


def test_reciprocal_rank_fusion() -> None:
    web = [r("https://a.org"), r("https://b.org"), r("https://c.org")]
    local = [r("file:///n/1.md"), r("https://b.org")]
    fused = reciprocal_rank_fusion([web, local], limit=10)
    assert [x.url for x in fused][:3] == ["https://b.org", "https://a.org", "file:///n/1.md"]
    assert len(reciprocal_rank_fusion([web, local], limit=2)) == 2


async def test_the_web_and_the_corpus_are_searched_together(notes: Path, tmp_path: Path) -> None:
    down = Scripted("searxng", err("searxng", "network"))
    up = Scripted("duckduckgo", ["https://magma.example/1"])
    local = SearchChain([LocalSearch(corpus(notes, tmp_path))])
    fused = FusedSearch(SearchChain([down, up], retry_pause_s=0), local)
    urls = [x.url for x in await fused.search(SearchQuery(q="magma crust"))]
    assert "https://magma.example/1" in urls  # the web's failover still works
    assert any(u.endswith("plain.md") for u in urls)
    dead = FusedSearch(SearchChain([Scripted("s", err("s", "network"))], retry_pause_s=0), local)
    assert [x.url for x in await dead.search(SearchQuery(q="magma"))][0].endswith("plain.md")


async def test_both_sides_failing_is_a_search_error() -> None:
    from deepsearch.errors import SearchError

    web = SearchChain([Scripted("searxng", err("searxng", "network"))], retry_pause_s=0)
    local = SearchChain([Scripted("local", err("local", "bad_response"))], retry_pause_s=0)
    with pytest.raises(SearchError, match="searxng"):
        await FusedSearch(web, local).search(SearchQuery(q="magma"))


async def test_settings_with_local_next_to_a_web_provider_fuse(notes: Path, tmp_path: Path) -> None:
    settings = offline_settings(
        **{
            "search.providers": ["searxng", "local"],
            "search.searxng_url": "http://127.0.0.1:9",
            "search.corpus_dir": str(notes),
            "cache.dir": str(tmp_path / "cache"),
        }
    )
    search = build_search(settings)
    assert isinstance(search, FusedSearch)
    assert [s.name for s in search.status()] == ["searxng", "local"]
    await search.aclose()


def test_corpus_with_a_web_provider_keeps_both() -> None:
    folder = Path("/notes")
    assert _providers("duckduckgo", folder) == ["duckduckgo", "local"]
    assert _providers("local,searxng", folder) == ["local", "searxng"]
    assert _providers(None, folder) == ["local"]
    assert _providers("brave", None) == ["brave"]


def test_local_sources_show_as_paths() -> None:
    assert display_path("file:///my%20notes/caf%C3%A9.md") == "/my notes/café.md"
    assert display_path("https://a.org/x%20y") == "https://a.org/x%20y"
    assert display_path("file:///n/%1B%5B2J.md") == "/n/[2J.md"  # no escape via %1B
    md = '[^1]: "q" — [Notes](file:///my%20notes/a.md)'
    assert paths_in_text(md, markdown=True) == '[^1]: "q" — [Notes](</my notes/a.md>)'
    assert (
        paths_in_text("read 2: file:///a%20b.md, https://x.org") == "read 2: /a b.md, https://x.org"
    )


def test_counts_tell_skipped_empty_and_unchanged_apart(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22, item 10: a file over the cap is its own count with a human size (not
    "unreadable", not in the total), an empty file is no document, plural forms, and a
    re-run with nothing changed still prints its summary line."""
    from deepsearch.web.search import local_progress

    monkeypatch.setattr(local_module, "MAX_FILE_BYTES", 30_000)
    monkeypatch.setattr(local_progress, "MAX_FILE_BYTES", 30_000)
    (notes / "huge.md").write_text("# Big\n\n" + "word " * 10_000, encoding="utf-8")  # 50 kB
    (notes / "blank.txt").write_text("  \n\n ", encoding="utf-8")
    seen: list[IndexProgress] = []
    corpus(notes, tmp_path, on_progress=seen.append).ensure_index()
    built = seen[-1]
    assert (built.documents, built.too_large, built.empty, built.unreadable) == (3, 1, 1, 0)
    assert built.bytes_total == sum(
        p.stat().st_size for p in notes.iterdir() if p.name != "huge.md"
    )
    line = index_summary(built)
    assert line.startswith("corpus: 3 documents indexed from 6 files"), line
    assert "1 file over the 30.0 kB cap skipped (50.0 kB)" in line
    assert "1 empty file skipped" in line and "unreadable" not in line

    again: list[IndexProgress] = []
    reused = corpus(notes, tmp_path, on_progress=again.append)
    reused.ensure_index()
    assert reused.last_index_event == "loaded"
    assert [p.finished for p in again] == [True], "the summary, also when nothing changed"
    line = index_summary(again[0])
    assert line.startswith("corpus: 3 documents indexed from 6 files")
    assert "nothing changed" in line and "1 empty file skipped" in line

    # One edit: that file is read, the others (the one over the cap included) are not.
    first = sorted(p for p in notes.iterdir() if p.suffix == ".md" and p.name != "huge.md")[0]
    first.write_text(first.read_text(encoding="utf-8") + "\n\nOne more line.", encoding="utf-8")
    edited: list[IndexProgress] = []
    corpus(notes, tmp_path, on_progress=edited.append).ensure_index()
    assert "; 4 unchanged, 1 read)" in index_summary(edited[-1]), index_summary(edited[-1])


def test_one_document_is_singular(tmp_path: Path) -> None:
    root = tmp_path / "one"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nAlpha.", encoding="utf-8")
    seen: list[IndexProgress] = []
    corpus(root, tmp_path, on_progress=seen.append).ensure_index()
    assert index_summary(seen[-1]).startswith("corpus: 1 document indexed from 1 file (")


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Tide tables of Saint-Malo\n\nThe tide reaches 13 metres.", "Tide tables of Saint-Malo"),
        ("Tide tables\n===========\nThe tide reaches 13 metres.", "Tide tables"),
        ("The tide reaches 13 metres at Saint-Malo.\n\nMore text.", "tide notes"),
        ("Just one line", "tide notes"),
    ],
)
def test_a_plain_text_files_title_is_its_heading_line(
    tmp_path: Path, text: str, title: str
) -> None:
    from deepsearch.web.search.local_files import extract_document

    path = tmp_path / "tide_notes.txt"
    path.write_text(text, encoding="utf-8")
    got = extract_document(path)
    assert got is not None and got[0] == title
