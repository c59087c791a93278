"""The collector while the console script starts (deepsearch/collector.py): rare
collections from `hold` to `settle`, then the start-up's objects frozen and the
interpreter's thresholds back; a process that never held is left alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from deepsearch import collector


@pytest.fixture(autouse=True)
def restored_collector() -> Iterator[None]:
    """Each test starts from a collector no one holds and nothing frozen (the suite's
    conftest freezes what collection loaded), and leaves it as it found it."""
    before = gc.get_threshold()
    collector._saved.clear()
    gc.unfreeze()
    yield
    collector._saved.clear()
    gc.set_threshold(*before)
    gc.freeze()  # back out of the collector's reach, as the conftest had it


def test_start_up_collects_rarely_then_freezes_and_restores() -> None:
    before = gc.get_threshold()
    collector.hold()
    collector.hold()  # a second hold must not save the raised thresholds as "before"
    assert gc.get_threshold() == collector.START_THRESHOLD
    collector.settle()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() > 0, "the start-up's objects were not frozen"


def test_settle_without_hold_leaves_the_collector_alone() -> None:
    gc.set_threshold(1234, 5, 6)  # a host process's own choice (the library, a test)
    collector.settle()
    assert gc.get_threshold() == (1234, 5, 6)
    assert gc.get_freeze_count() == 0
