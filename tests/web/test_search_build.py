"""build_search's one HTTP client: shared by every provider, closed with the chain
when it made the client itself, left open when the caller passed one."""

from __future__ import annotations

import httpx

from deepsearch.web.search import build_search
from deepsearch.web.search.fused import FusedSearch
from tests.fakes.search_servers import FakeSearchServers

# The factory tests' settings: every provider's URL and key on the `servers` fakes.
from tests.web.test_search_chain import _settings


def _clients(chain: object) -> list[httpx.AsyncClient]:
    return [p._client for p in chain.providers if hasattr(p, "_client")]  # type: ignore[attr-defined]


async def test_the_chain_closes_the_client_it_made(servers: FakeSearchServers) -> None:
    chain = build_search(_settings(servers, ["searxng", "brave"]))
    clients = _clients(chain)
    assert len(clients) == 2 and clients[0] is clients[1]  # one client for both
    assert not clients[0].is_closed
    await chain.aclose()
    assert clients[0].is_closed


async def test_a_fused_chain_closes_it_too(servers: FakeSearchServers, tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a.md").write_text("# A\n\nSomething.", encoding="utf-8")
    chain = build_search(
        _settings(servers, ["searxng", "local"], **{"search.corpus_dir": str(tmp_path)})
    )
    assert isinstance(chain, FusedSearch)
    [client] = _clients(chain)
    await chain.aclose()
    assert client.is_closed


async def test_a_callers_client_stays_open(servers: FakeSearchServers) -> None:
    async with httpx.AsyncClient() as mine:
        chain = build_search(_settings(servers, ["searxng"]), http_client=mine)
        assert _clients(chain) == [mine]
        await chain.aclose()
        assert not mine.is_closed
