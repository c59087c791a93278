"""A corrupt state file heals (issue 36, item 24): a damaged cache database is moved
aside once, naming it, and the next run has a working cache and no warning; a corpus
index of valid JSON but the wrong shape is rebuilt, not an IndexError on every later
search; a demoted output mode is re-checked after a day instead of kept for good."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from deepsearch.llm.output_modes import OutputModeLadder
from deepsearch.llm.rung_memory import DEMOTION_TTL_S, RungMemory
from deepsearch.web.cache import WebCache
from deepsearch.web.search.local import LocalCorpus
from deepsearch.web.types import SearchQuery
from tests.llm.test_output_modes import LOCAL_RUNGS, Endpoint, request


def test_a_damaged_cache_database_is_moved_aside_once_and_the_cache_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "cache.db").write_bytes(b"not a database, " * 64)
    with caplog.at_level(logging.WARNING, logger="deepsearch.web.cache"):
        cache = WebCache(tmp_path)
        cache.set("k", "v", ttl_s=60)
        assert cache.get("k") == "v"
        cache.close()
        said = caplog.text
        caplog.clear()
        again = WebCache(tmp_path)
        assert again.get("k") == "v"
        again.close()
    assert f"cache at {tmp_path}: cache.db was damaged (file is not a database)" in said
    assert "moved aside to cache.db.corrupt" in said
    assert caplog.text == "", "the next run has nothing to say"
    assert (tmp_path / "cache.db.corrupt").read_bytes().startswith(b"not a database")


def test_a_corpus_index_of_the_wrong_shape_is_rebuilt(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Basalt\n\nMagma cools into basalt.", "utf-8")
    (notes / "b.md").write_text("# Granite\n\nGranite cools slowly underground.", "utf-8")
    index = tmp_path / "index"
    LocalCorpus(notes, index_root=index).ensure_index()
    built = next(p for p in (next(index.iterdir())).iterdir() if (p / "docs.json").is_file())
    (built / "docs.json").write_text(json.dumps([{"path": "x"}]), "utf-8")  # valid JSON
    corpus = LocalCorpus(notes, index_root=index)
    found = corpus.search(SearchQuery(q="granite underground"))
    assert [r.title for r in found][:1] == ["Granite"]
    assert corpus.last_index_event == "built"


async def test_a_demoted_output_mode_is_re_checked_after_a_day(tmp_path: Path) -> None:
    path, clock = tmp_path / "output-modes.json", [1_000_000.0]
    now = lambda: clock[0]  # noqa: E731
    refusing = Endpoint("json_schema")  # a transient 500 naming response_format
    first = OutputModeLadder(LOCAL_RUNGS, memory=RungMemory(path, now=now), server="http://a/v1")
    await first.complete(request(), refusing.send)
    stored = RungMemory(path, now=now).get("http://a/v1", "m1")
    assert stored is not None and stored.mode == "json_object_schema" and stored.demoted

    clock[0] += DEMOTION_TTL_S + 1
    healthy = Endpoint()  # the server accepts json_schema again
    later = OutputModeLadder(LOCAL_RUNGS, memory=RungMemory(path, now=now), server="http://a/v1")
    assert (await later.complete(request(), healthy.send)).mode == "json_schema"
    assert healthy.sent == ["json_schema"], "climbed from the top again"
    kept = RungMemory(path, now=now).get("http://a/v1", "m1")
    assert kept is not None and kept.mode == "json_schema" and not kept.demoted
    clock[0] += 10 * DEMOTION_TTL_S
    assert RungMemory(path, now=now).get("http://a/v1", "m1") is not None, "the top never expires"
