"""The suite's `--dist loadgroup` scheduler (tests/xdist_counting.py) hands out exactly
what pytest-xdist's own does, in the same order, and its kept counts are xdist's
recounts at every step: the only change is the cost of the bookkeeping."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest
from xdist.remote import Producer

if TYPE_CHECKING:
    from xdist.scheduler import LoadGroupScheduling

pytestmark = pytest.mark.filterwarnings("ignore")


def _classes() -> tuple[type[LoadGroupScheduling], type[LoadGroupScheduling]]:
    """xdist's scheduler and ours, imported by the tests that use them: not by every
    worker's collection (~13 ms each)."""
    from xdist.scheduler import LoadGroupScheduling

    from tests.xdist_counting import CountingLoadGroup

    return LoadGroupScheduling, CountingLoadGroup


class FakeWorker:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[list[int]] = []
        self.queue: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.append(list(indices))
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _config() -> Any:
    option = SimpleNamespace(loadscopereorder=True, dist="loadgroup")
    return SimpleNamespace(option=option, getvalue=lambda key: ["3*popen"] if key == "tx" else None)


NODE_IDS = [
    f"tests/t{i // 40}.py::test_{i}" + (f"@sdk{i % 3}" if i % 11 == 0 else "") for i in range(300)
]


def _scheduled(cls: type[LoadGroupScheduling]) -> tuple[Any, list[FakeWorker]]:
    """A scheduler of `cls` that has handed out its first tests to three workers."""
    sched = cls(_config(), Producer("test", enabled=False))
    workers = [FakeWorker(f"gw{i}") for i in range(3)]
    for worker in workers:
        sched.add_node(worker)
    for worker in workers:
        sched.add_node_collection(worker, NODE_IDS)
    sched.schedule()
    return sched, workers


def _play(cls: type[LoadGroupScheduling], crash_after: int | None = None) -> list[Any]:
    """Three workers run what they are sent, one report at a time in turn; with
    `crash_after`, the first worker dies after that many reports."""
    sched, workers = _scheduled(cls)
    recount = _classes()[0]._pending_of
    trail: list[Any] = []
    turn = reports = 0
    while any(w.queue for w in workers if w in sched.assigned_work):
        worker = workers[turn % 3]
        turn += 1
        if worker not in sched.assigned_work or not worker.queue:
            continue
        if crash_after is not None and reports >= crash_after and worker is workers[0]:
            trail.append(("crashed", sched.remove_node(worker)))
            crash_after = None
            continue
        sched.mark_test_complete(worker, worker.queue.pop(0))
        reports += 1
        # what the controller asks after every event, and xdist's own recount of it
        counts = [
            recount(sched, sched.assigned_work[w]) for w in workers if w in sched.assigned_work
        ]
        kept = [
            sched._pending_of(sched.assigned_work[w]) for w in workers if w in sched.assigned_work
        ]
        trail.append((counts, kept, sched.tests_finished, sched.has_pending))
    trail.append([w.sent for w in workers])
    return trail


def test_the_same_tests_go_to_the_same_workers_in_the_same_order() -> None:
    stock_class, counting_class = _classes()
    stock, counting = _play(stock_class), _play(counting_class)
    assert counting == stock
    assert stock[-2][2] is True  # every test ran: the run finished
    assert sorted(i for sent in stock[-1] for batch in sent for i in batch) == list(range(300))


def test_kept_counts_are_the_recounts_at_every_step() -> None:
    for counts, kept, _finished, _pending in _play(_classes()[1])[:-1]:
        assert kept == counts


def test_a_crashed_worker_s_tests_go_to_the_others_as_xdist_sends_them() -> None:
    stock_class, counting_class = _classes()
    stock, counting = _play(stock_class, 100), _play(counting_class, 100)
    assert counting == stock
    crash = next(step for step in counting if step[0] == "crashed")
    assert crash[1] in NODE_IDS  # the test it died in is named
    for step in counting[:-1]:
        if step[0] != "crashed":
            assert step[1] == step[0]  # kept == recounted, after the crash too


def test_a_test_reported_complete_twice_is_counted_once() -> None:
    stock_class, counting_class = _classes()
    sched, workers = _scheduled(counting_class)
    first = workers[0].queue[0]
    sched.mark_test_complete(workers[0], first)
    sched.mark_test_complete(workers[0], first)
    workload = sched.assigned_work[workers[0]]
    assert sched._pending_of(workload) == stock_class._pending_of(sched, workload)
