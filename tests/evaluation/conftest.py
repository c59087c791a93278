"""The eval tests' shared world: a loopback site and a SearXNG fake that finds it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.evaluation.helpers import pages, search_results
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer


@pytest.fixture
def searx() -> Iterator[FakeSearchServers]:
    with LoopbackServer(routes=pages()) as web, FakeSearchServers() as srv:
        srv.always("searxng", 200, {"results": search_results(web)})
        yield srv
