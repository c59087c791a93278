"""The Jina reader against a loopback fake speaking r.jina.ai's JSON shape."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from deepsearch.config import ReaderConfig, load_config
from deepsearch.web.jina_reader import JinaReader
from deepsearch.web.reader import LocalReader, build_reader
from deepsearch.web.types import Page, ReadFailure
from tests.fakes.web_server import LoopbackServer, _Handler

SECRET = "jina_test_key_0123456789"


def _reader_endpoint(handler: _Handler) -> None:
    target = json.loads(handler.body)["url"]
    if "missing" in target:
        payload = {
            "code": 422,
            "name": "AssertionFailureError",
            "status": 42206,
            "readableMessage": "Failed to goto " + target,
        }
        handler.send_body(422, json.dumps(payload).encode(), "application/json")
        return
    if "blank" in target:
        payload = {
            "code": 200,
            "status": 20000,
            "data": {"title": "", "url": target, "content": ""},
        }
        handler.send_body(200, json.dumps(payload).encode(), "application/json")
        return
    payload = {
        "code": 200,
        "status": 20000,
        "data": {
            "title": "Tidal Power",
            "description": "About tides",
            "url": target,
            "content": (
                "# Tidal Power\n\nThe Bay of Fundy has the *highest* tides, says "
                "[the 2019 survey](https://example.org/survey) and [the report]"
                "(https://example.org/report.pdf)."
            ),
            "publishedTime": "2024-05-17T08:00:00Z",
            "links": {
                "The report": "https://example.org/report.pdf",
                "Rel": "/about",
                "Mail": "mailto:x@y.z",
            },
            "usage": {"tokens": 42},
        },
    }
    handler.send_body(200, json.dumps(payload).encode(), "application/json")


@pytest.fixture(scope="module")
def jina() -> Iterator[LoopbackServer]:
    with LoopbackServer(routes={"/": _reader_endpoint}) as server:
        yield server


def make(jina: LoopbackServer, key: str | None = SECRET) -> JinaReader:
    return JinaReader(ReaderConfig(provider="jina", jina_url=jina.base), api_key=key)


async def test_maps_response_to_page(jina: LoopbackServer) -> None:
    reader = make(jina)
    try:
        result = await reader.read("https://news.example.com/tides")
    finally:
        await reader.aclose()
    assert isinstance(result, Page), result
    assert result.title == "Tidal Power"
    # plain like every reader's text: no heading marks, emphasis or link targets
    assert result.text == (
        "Tidal Power\n\nThe Bay of Fundy has the highest tides, says the 2019 survey and the report."
    )
    assert result.final_url == "https://news.example.com/tides"
    assert result.published == "2024-05-17T08:00:00Z"
    assert result.links == [  # the content's own links first, then Jina's summary
        ("the 2019 survey", "https://example.org/survey"),
        ("the report", "https://example.org/report.pdf"),
        ("Rel", "https://news.example.com/about"),
    ]
    assert result.content_links == 2
    assert json.loads(jina.posted[-1]) == {"url": "https://news.example.com/tides"}
    path, headers = jina.requests[-1]
    assert path == "/"
    assert headers["Authorization"] == f"Bearer {SECRET}"
    assert headers["Accept"] == "application/json"


async def test_errors_are_typed_and_never_leak_the_key(jina: LoopbackServer) -> None:
    reader = make(jina)
    try:
        failed = await reader.read("https://news.example.com/missing")
        blank = await reader.read("https://news.example.com/blank")
        scheme = await reader.read("file:///etc/passwd")
    finally:
        await reader.aclose()
    assert isinstance(failed, ReadFailure) and (failed.kind, failed.status) == ("http_status", 422)
    assert "Failed to goto" in failed.detail
    assert isinstance(blank, ReadFailure) and blank.kind == "empty"
    assert isinstance(scheme, ReadFailure) and scheme.kind == "blocked"
    for item in (failed, blank, scheme):
        assert SECRET not in item.model_dump_json()


async def test_no_key_sends_no_authorization(jina: LoopbackServer) -> None:
    reader = make(jina, key=None)
    try:
        assert isinstance(await reader.read("https://news.example.com/x"), Page)
    finally:
        await reader.aclose()
    assert "Authorization" not in jina.requests[-1][1]


async def test_unreachable_endpoint_is_a_failure() -> None:
    server = LoopbackServer()
    base = server.base
    server.server_close()
    reader = JinaReader(ReaderConfig(provider="jina", jina_url=base), api_key=SECRET)
    try:
        result = await reader.read("https://news.example.com/x")
    finally:
        await reader.aclose()
    assert isinstance(result, ReadFailure) and result.kind == "network"
    assert SECRET not in result.detail


def test_build_reader_picks_the_provider() -> None:
    local = load_config(environ={}).settings
    assert isinstance(build_reader(local), LocalReader)
    jina = load_config(
        environ={"JINA_API_KEY": SECRET}, overrides={"reader.provider": "jina"}
    ).settings
    reader = build_reader(jina)
    assert isinstance(reader, JinaReader)
    assert reader._api_key == SECRET
