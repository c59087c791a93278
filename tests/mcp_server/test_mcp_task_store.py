"""The task store's rules (task_store.py), on the fake clock: a finished task is kept
for exactly its TTL counted from the end of its run (a later message does not extend
it), a task without a TTL (null: unlimited, as the spec and the SDK's own store read
it) is kept; a finished task's status does not change; each refusal names the task."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.fakes.clock import FakeClock

if TYPE_CHECKING:
    from deepsearch.mcp_server.task_store import ResearchTaskStore


def _store() -> tuple[ResearchTaskStore, FakeClock]:
    from deepsearch.mcp_server.task_store import ResearchTaskStore

    clock = FakeClock()
    return ResearchTaskStore(clock), clock


async def test_a_finished_task_is_kept_until_exactly_its_ttl_after_the_run() -> None:
    from mcp.types import TaskMetadata

    store, clock = _store()
    task = await store.create_task(TaskMetadata(ttl=2_000))  # 2 s
    clock.advance(5)  # running: the TTL has not started
    await store.update_task(task.taskId, status="completed")
    clock.advance(1.9990234375)  # binary fractions: the sums are exact
    await store.update_task(task.taskId, status_message="a late line")  # no new lease
    assert await store.get_task(task.taskId) is not None
    clock.advance(0.0009765625)  # 2 s after the run ended
    assert await store.get_task(task.taskId) is None


async def test_a_finished_task_without_a_ttl_is_kept() -> None:
    from mcp.types import TaskMetadata

    store, clock = _store()
    task = await store.create_task(TaskMetadata(ttl=None))
    await store.update_task(task.taskId, status="failed")
    clock.advance(10**6)
    kept = await store.get_task(task.taskId)
    assert kept is not None and kept.status == "failed"


async def test_a_finished_task_keeps_its_status_and_takes_a_message() -> None:
    from mcp.types import TaskMetadata

    store, _ = _store()
    task = await store.create_task(TaskMetadata(ttl=1_000))
    await store.update_task(task.taskId, status="completed")
    with pytest.raises(ValueError) as caught:
        await store.update_task(task.taskId, status="working")
    assert str(caught.value) == "Cannot transition from terminal status 'completed'"
    again = await store.update_task(task.taskId, status="completed", status_message="done")
    assert (again.status, again.statusMessage) == ("completed", "done")


async def test_a_task_that_is_not_there_is_named() -> None:
    from mcp.types import CallToolResult, TaskMetadata

    store, _ = _store()
    missing = "Task with ID gone not found"
    with pytest.raises(ValueError, match=f"^{missing}$"):
        await store.update_task("gone", status_message="x")
    with pytest.raises(ValueError, match=f"^{missing}$"):
        await store.store_result("gone", CallToolResult(content=[]))
    with pytest.raises(ValueError, match=f"^{missing}$"):
        await store.wait_for_update("gone")
    assert await store.get_result("gone") is None
    task = await store.create_task(TaskMetadata(ttl=1_000), "t-1")
    with pytest.raises(ValueError, match="^Task with ID t-1 already exists$"):
        await store.create_task(TaskMetadata(ttl=1_000), "t-1")
    assert await store.delete_task(task.taskId) is True
    assert await store.delete_task(task.taskId) is False
    assert await store.get_task(task.taskId) is None
