"""Fixtures shared by the web tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.search_servers import FakeSearchServers


@pytest.fixture
def servers() -> Iterator[FakeSearchServers]:
    """Loopback SearXNG, Jina, Brave and Serper endpoints speaking their wire formats."""
    with FakeSearchServers() as srv:
        yield srv
