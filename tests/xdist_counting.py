"""`--dist loadgroup` with each worker's count of pending tests kept, not recounted.

pytest-xdist's loadgroup scheduler (its LoadScopeScheduling) answers "how many tests
has this worker still to run" by walking every test it ever gave that worker, after
each report and on every turn of the controller's event loop, and finds a test's place
in the collection with `list.index`: quadratic in the suite's size. Measured with 2,600
empty tests on three workers: the controller's CPU 1.85 s against 1.39 s for `--dist
load`, on two cores the workers share. Here the count lives on the workload and moves
with each assignment and each report; the rest is xdist's own scheduler.

`BatchedLoadGroup` also sends a worker its next tests several at a time. xdist sends
one work unit per message (for an ungrouped test, one test) each time a worker's queue
falls to two: ~2,200 commands a suite, each serialized by the controller and read by
the worker. Topping a queue up to six in one message sends about a third as many;
with 2,600 empty tests on three workers (and tests/xdist_lean.py), the median CPU of
5 runs went from 5.85 s to 5.45 s. Near the end, where a worker that holds tests
another could run costs wall time, it tops up to three, as xdist does.

tests/conftest.py installs it (pytest_xdist_make_scheduler) for `--dist loadgroup` only.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadGroupScheduling


class Workload(dict[str, dict[str, bool]]):
    """A worker's work units (scope -> {node id: done}) and how many are not done."""

    pending = 0


class CountingLoadGroup(LoadGroupScheduling):
    """LoadGroupScheduling whose pending counts and collection positions are kept."""

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._positions: dict[Any, dict[str, int]] = {}

    def add_node(self, node: Any) -> None:
        assert node not in self.assigned_work
        self.assigned_work[node] = Workload()

    def _pending_of(self, workload: dict[str, dict[str, bool]]) -> int:
        if isinstance(workload, Workload):
            return workload.pending
        return super()._pending_of(workload)

    def _assign_work_unit(self, node: Any) -> None:
        node.send_runtest_some(self._take_unit(node))

    def _take_unit(self, node: Any) -> list[int]:
        """The next work unit, now `node`'s: its tests' places in the collection."""
        assert self.workqueue
        scope, work_unit = self.workqueue.popitem(last=False)
        workload = self.assigned_work[node]
        workload[scope] = work_unit
        todo = [nodeid for nodeid, done in work_unit.items() if not done]
        workload.pending += len(todo)
        positions = self._positions.get(node)
        if positions is None:
            collection = self.registered_collections[node]
            positions = self._positions[node] = {n: i for i, n in enumerate(collection)}
        return [positions[nodeid] for nodeid in todo]

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        workload = self.assigned_work[node]
        unit = workload[self._split_scope(nodeid)]
        if not unit[nodeid]:
            workload.pending -= 1
        super().mark_test_complete(node, item_index, duration)


class BatchedLoadGroup(CountingLoadGroup):
    """CountingLoadGroup that tops a worker's queue up several tests at a time."""

    batch = 6  # tests a worker's queue is topped up to, in one message
    usual = 3  # what xdist's one unit at a queue of two comes to, kept for the end

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        workload = self.assigned_work[node]
        if workload.pending > 2:  # xdist's own threshold
            return
        plenty = len(self.workqueue) > self.batch * len(self.assigned_work)
        target = self.batch if plenty else self.usual
        indices = self._take_unit(node)
        while self.workqueue and workload.pending < target:
            indices += self._take_unit(node)
        node.send_runtest_some(indices)
