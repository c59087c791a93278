"""The suite's `--dist loadgroup` scheduler (tests/xdist_counting.py) hands out exactly
what pytest-xdist's own does, in the same order, and its kept counts are xdist's
recounts at every step: the only change is the cost of the bookkeeping."""

from __future__ import annotations

from collections.abc import Iterator
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


def _turns(sched: Any, workers: list[FakeWorker], crash_after: int | None) -> Iterator[Any]:
    """Three workers run what they are sent, one report at a time in turn; with
    `crash_after`, the first worker dies after that many reports. Yields ("crashed",
    the test it names) or ("ran", the test's index) after each event."""
    turn = reports = 0
    while any(w.queue for w in workers if w in sched.assigned_work):
        worker = workers[turn % 3]
        turn += 1
        if worker not in sched.assigned_work or not worker.queue:
            continue
        if crash_after is not None and reports >= crash_after and worker is workers[0]:
            crash_after = None
            yield "crashed", sched.remove_node(worker)
            continue
        index = worker.queue.pop(0)
        sched.mark_test_complete(worker, index)
        reports += 1
        yield "ran", index


def _play(cls: type[LoadGroupScheduling], crash_after: int | None = None) -> list[Any]:
    """The trail of `_turns`: after each report, xdist's recounts and our kept counts."""
    sched, workers = _scheduled(cls)
    recount = _classes()[0]._pending_of
    trail: list[Any] = []
    for event, value in _turns(sched, workers, crash_after):
        if event == "crashed":
            trail.append(("crashed", value))
            continue
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


def _batched() -> type[LoadGroupScheduling]:
    from tests.xdist_counting import BatchedLoadGroup

    return BatchedLoadGroup


def _run_all(cls: type[LoadGroupScheduling], crash_after: int | None = None) -> dict[str, Any]:
    """`_turns` to the end: what each worker was sent and ran, and held at each send."""
    sched, workers = _scheduled(cls)
    ran: list[int] = []
    crashed: str | None = None
    tail_queues: list[int] = []  # a worker's queue after each send near the end
    for worker in workers:
        worker.send_runtest_some = _watching(worker, sched, tail_queues)  # type: ignore[method-assign]
    recount = _classes()[0]._pending_of
    for event, value in _turns(sched, workers, crash_after):
        if event == "crashed":
            crashed = value
            continue
        ran.append(value)
        for workload in sched.assigned_work.values():
            assert sched._pending_of(workload) == recount(sched, workload)
    sends = sum(len(w.sent) for w in workers)
    return {"sched": sched, "workers": workers, "ran": ran, "crashed": crashed,
            "sends": sends, "tail_queues": tail_queues}  # fmt: skip


def _watching(worker: FakeWorker, sched: Any, tail_queues: list[int]) -> Any:
    send = worker.send_runtest_some

    def send_runtest_some(indices: list[int]) -> None:
        send(indices)
        # units left before this send (near the end each unit is one test)
        if len(sched.workqueue) + len(indices) <= 6 * 3:
            tail_queues.append(len(worker.queue))

    return send_runtest_some


def test_batches_send_every_test_once_in_a_third_as_many_messages() -> None:
    stock, batched = _run_all(_classes()[0]), _run_all(_batched())
    assert sorted(batched["ran"]) == list(range(len(NODE_IDS)))
    assert batched["sched"].tests_finished
    assert batched["sends"] * 2 < stock["sends"], (batched["sends"], stock["sends"])


def test_a_group_s_tests_all_go_to_one_worker_in_one_message() -> None:
    run = _run_all(_batched())
    for group in ("@sdk0", "@sdk1", "@sdk2"):
        members = {i for i, nodeid in enumerate(NODE_IDS) if nodeid.endswith(group)}
        holders = [
            batch for w in run["workers"] for batch in w.sent if members & set(batch)
        ]  # fmt: skip
        assert len(holders) == 1 and members <= set(holders[0]), group


def test_near_the_end_a_queue_is_topped_up_only_as_xdist_does() -> None:
    run = _run_all(_batched())
    assert run["tail_queues"], "the simulation reached the end of the queue"
    assert max(run["tail_queues"]) <= 3


def test_a_crash_names_the_running_test_and_the_rest_still_run() -> None:
    run = _run_all(_batched(), crash_after=100)
    first = run["workers"][0]
    assert run["crashed"] == NODE_IDS[first.queue[0]]  # the one it was running
    assert set(run["ran"]) | {NODE_IDS.index(run["crashed"])} == set(range(len(NODE_IDS)))
