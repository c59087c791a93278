"""The `local` corpus provider end to end: index, search, reuse, rebuild, read back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deepsearch.errors import ConfigError
from deepsearch.web.search import build_search, local_corpus
from deepsearch.web.search.local import LocalCorpus, LocalSearch, read_local
from deepsearch.web.search.local_files import best_snippet, split_passages
from deepsearch.web.types import Page, ReadFailure, SearchQuery
from tests.fakes.clock import FakeClock
from tests.fakes.scripted_llm import offline_settings


def make_pdf(text: str) -> bytes:
    """A minimal one-page PDF with `text` in Helvetica (offsets computed, so pypdf reads it)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


FILLER = " ".join(["Unrelated filler sentence about gardening and weather."] * 20)


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "bm25.md").write_text(
        "# Okapi BM25\n\n"
        + FILLER
        + "\n\nBM25 ranks documents by term frequency saturation and inverse document "
        "frequency; k1 and b are its two parameters.\n",
        encoding="utf-8",
    )
    (root / "sub" / "tides.txt").write_text(
        "Tides are caused by the gravitational pull of the moon and the sun.\n", encoding="utf-8"
    )
    (root / "volcano.html").write_text(
        "<html><head><title>Volcanoes &amp; magma</title></head><body><nav>menu</nav>"
        "<article><h1>Volcanoes</h1><p>A volcano erupts when magma pressure rises.</p>"
        "<p>Basaltic lava is runny; rhyolitic lava is sticky.</p></article></body></html>",
        encoding="utf-8",
    )
    (root / "photosynthesis.pdf").write_bytes(
        make_pdf("Photosynthesis turns sunlight and carbon dioxide into glucose.")
    )
    (root / "ignored.bin").write_bytes(b"\x00\x01 magma tides")
    (root / ".hidden.md").write_text("magma secret", encoding="utf-8")
    return root


@pytest.fixture
def index_root(tmp_path: Path) -> Path:
    return tmp_path / "index"


async def test_search_finds_each_format(corpus_dir: Path, index_root: Path) -> None:
    provider = LocalSearch(LocalCorpus(corpus_dir, index_root=index_root))
    expectations = {
        "bm25 saturation parameters": ("bm25.md", "Okapi BM25"),
        "gravitational pull moon": ("tides.txt", "tides"),
        "magma pressure": ("volcano.html", "Volcanoes & magma"),
        "photosynthesis glucose sunlight": ("photosynthesis.pdf", "photosynthesis"),
    }
    for q, (filename, title) in expectations.items():
        results = await provider.search(SearchQuery(q=q))
        assert results, q
        top = results[0]
        assert top.url.startswith("file:///") and top.url.endswith(filename)
        assert top.title == title
        assert top.provider == "local"
    hidden = await provider.search(SearchQuery(q="secret"))
    assert hidden == []  # dotfiles and unknown extensions are not indexed


async def test_snippet_is_the_best_passage_not_the_start(
    corpus_dir: Path, index_root: Path
) -> None:
    provider = LocalSearch(LocalCorpus(corpus_dir, index_root=index_root))
    (top,) = (await provider.search(SearchQuery(q="saturation inverse document frequency")))[:1]
    assert "saturation" in top.snippet
    assert "gardening" not in top.snippet[:60]
    assert len(top.snippet) <= 302


async def test_index_is_persisted_reused_and_rebuilt_on_change(
    corpus_dir: Path, index_root: Path
) -> None:
    first = LocalCorpus(corpus_dir, index_root=index_root)
    await LocalSearch(first).search(SearchQuery(q="tides"))
    assert first.last_index_event == "built"

    second = LocalCorpus(corpus_dir, index_root=index_root)  # a new run
    results = await LocalSearch(second).search(SearchQuery(q="tides moon"))
    assert second.last_index_event == "loaded"
    assert results[0].url.endswith("tides.txt")

    (corpus_dir / "sub" / "tides.txt").write_text(
        "Tides now mention the spring equinox only.\n", encoding="utf-8"
    )
    (corpus_dir / "new.md").write_text("# Glaciers\n\nGlaciers carve fjords.\n", encoding="utf-8")
    results = await LocalSearch(second).search(SearchQuery(q="fjords"))
    assert second.last_index_event == "built"
    assert results[0].url.endswith("new.md")
    assert await LocalSearch(second).search(SearchQuery(q="gravitational")) == []
    # only the current index is kept on disk
    assert len([p for p in second.index_home.iterdir() if not p.name.startswith(".")]) == 1


async def test_deleting_a_file_rebuilds(corpus_dir: Path, index_root: Path) -> None:
    corpus = LocalCorpus(corpus_dir, index_root=index_root)
    assert await LocalSearch(corpus).search(SearchQuery(q="magma"))
    (corpus_dir / "volcano.html").unlink()
    assert await LocalSearch(corpus).search(SearchQuery(q="magma")) == []


async def test_documents_read_back_through_their_urls(corpus_dir: Path, index_root: Path) -> None:
    corpus = LocalCorpus(corpus_dir, index_root=index_root, clock=FakeClock())
    results = await LocalSearch(corpus).search(SearchQuery(q="magma pressure"))
    page = await read_local(results[0].url, corpus)
    assert isinstance(page, Page)
    assert "magma pressure rises" in page.text
    assert "menu" not in page.text  # boilerplate removed by extraction
    assert page.title == "Volcanoes & magma"
    assert page.content_type == "text/html"
    assert page.fetched_at == "2026-01-01T00:00:00+00:00"  # the injected clock's time
    pdf = await read_local((corpus_dir / "photosynthesis.pdf").as_uri(), corpus)
    assert isinstance(pdf, Page) and "carbon dioxide" in pdf.text
    assert pdf.content_type == "application/pdf"


@pytest.mark.parametrize(
    ("make_url", "kind"),
    [
        (lambda root: Path("/etc/passwd").as_uri(), "blocked"),
        (lambda root: (root / ".." / "index").as_uri(), "blocked"),
        (lambda root: (root / "missing.md").as_uri(), "http_status"),
        (lambda root: (root / "ignored.bin").as_uri(), "unsupported_type"),
        (lambda root: "https://a.org/x", "invalid_url"),
        (lambda root: "file://otherhost/x.md", "invalid_url"),
    ],
)
async def test_reading_outside_the_corpus_is_refused(
    corpus_dir: Path,
    index_root: Path,
    make_url,
    kind: str,  # type: ignore[no-untyped-def]
) -> None:
    failure = await read_local(make_url(corpus_dir), LocalCorpus(corpus_dir, index_root=index_root))
    assert isinstance(failure, ReadFailure)
    assert failure.kind == kind


async def test_symlink_escaping_the_corpus_is_refused(
    corpus_dir: Path, index_root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "private.md"
    outside.write_text("# Private\n\nsecret plans", encoding="utf-8")
    os.symlink(outside, corpus_dir / "link.md")
    corpus = LocalCorpus(corpus_dir, index_root=index_root)
    failure = await read_local((corpus_dir / "link.md").as_uri(), corpus)
    assert isinstance(failure, ReadFailure) and failure.kind == "blocked"
    # ...and its text never reaches search snippets either
    hits = await LocalSearch(corpus).search(SearchQuery(q="secret plans"))
    assert all("secret" not in h.snippet for h in hits)
    assert all(not h.url.endswith("link.md") for h in hits)


async def test_empty_corpus_and_empty_query(tmp_path: Path, index_root: Path) -> None:
    (tmp_path / "empty").mkdir()
    corpus = LocalCorpus(tmp_path / "empty", index_root=index_root)
    assert await LocalSearch(corpus).search(SearchQuery(q="anything")) == []
    assert await LocalSearch(corpus).search(SearchQuery(q="  ")) == []


def test_missing_corpus_dir_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        LocalCorpus(tmp_path / "nope")


async def test_settings_build_a_local_only_chain(corpus_dir: Path, tmp_path: Path) -> None:
    settings = offline_settings(
        **{
            "search.providers": ["local"],
            "search.corpus_dir": str(corpus_dir),
            "cache.dir": str(tmp_path / "cache"),
        }
    )
    chain = build_search(settings)
    results = await chain.search(SearchQuery(q="volcano magma", sites=["python.org"]))
    assert results[0].url.endswith("volcano.html")  # file:// results survive site filters
    corpus = local_corpus(settings)
    assert corpus is not None
    assert corpus.index_home.is_relative_to(tmp_path / "cache")
    await chain.aclose()


def test_passages_and_snippets() -> None:
    text = "para one.\n\n" + ("word " * 400) + "\n\nlast para"
    passages = split_passages(text, size=200)
    assert all(len(p) <= 200 for p in passages)
    assert passages[0].startswith("para one.") and passages[-1].endswith("last para")
    passage = "a " * 200 + "needle here " + "b " * 200
    snippet = best_snippet(passage, ["needle"], size=100)
    assert "needle" in snippet and len(snippet) <= 102


async def test_a_damaged_index_is_rebuilt(corpus_dir: Path, index_root: Path) -> None:
    first = LocalCorpus(corpus_dir, index_root=index_root)
    await LocalSearch(first).search(SearchQuery(q="tides"))
    (index_dir,) = [p for p in first.index_home.iterdir() if not p.name.startswith(".")]
    (index_dir / "passages.json").write_text("{not json", encoding="utf-8")
    second = LocalCorpus(corpus_dir, index_root=index_root)
    results = await LocalSearch(second).search(SearchQuery(q="tides moon"))
    assert second.last_index_event == "built"
    assert results[0].url.endswith("tides.txt")


def test_two_runs_building_the_same_index_at_once(corpus_dir: Path, index_root: Path) -> None:
    import threading

    corpora = [LocalCorpus(corpus_dir, index_root=index_root) for _ in range(3)]
    errors: list[BaseException] = []

    def build(corpus: LocalCorpus) -> None:
        try:
            assert corpus.search(SearchQuery(q="magma"))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=build, args=(c,)) for c in corpora]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    leftovers = [p.name for p in corpora[0].index_home.iterdir()]
    assert len([n for n in leftovers if not n.startswith(".")]) == 1  # .files: per-file cache
    assert not [n for n in leftovers if n.startswith(".build-")]  # temp builds cleaned up


async def test_corpus_markdown_reads_as_plain_text(corpus_dir: Path, index_root: Path) -> None:
    """A corpus .md file comes out like a web page: no link targets, no markdown escapes."""
    (corpus_dir / "rail.md").write_text(
        "# Rail gauge\n\nThe gauge was changed in 1900 \\`\\`in order to allow the trains'' "
        "says [the report](https://rail.example.org/report.pdf) of **the company**.\n",
        encoding="utf-8",
    )
    corpus = LocalCorpus(corpus_dir, index_root=index_root)
    page = await read_local((corpus_dir / "rail.md").as_uri(), corpus)
    assert isinstance(page, Page)
    assert page.title == "Rail gauge"
    assert page.text == (
        "Rail gauge\n\nThe gauge was changed in 1900 ``in order to allow the trains'' "
        "says the report of the company."
    )
