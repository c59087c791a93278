"""Where `deepsearch mcp` keeps its research tasks: the MCP SDK's `TaskStore` interface
(the SDK's tasks/get, tasks/result and tasks/list handlers read it), in memory, on the
injectable clock.

Unlike the SDK's own InMemoryTaskStore, a task is never dropped while it runs (that one
counts the TTL from creation, so a run longer than its TTL vanished mid-run), and a
finished task is kept for its TTL after it finished (for ever with a TTL of null,
"unlimited", as the SDK's store reads it); every waiter on a task wakes when
it changes (that one woke only the last of two concurrent tasks/result requests).
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio
from mcp.shared.experimental.tasks.helpers import create_task_state, is_terminal
from mcp.shared.experimental.tasks.store import TaskStore
from mcp.types import Result, Task, TaskMetadata, TaskStatus

from deepsearch.clock import Clock, SystemClock


@dataclass
class _Stored:
    task: Task
    result: Result | None = None
    # On the clock's monotonic timer; None while it runs, or kept (a TTL of null).
    expires: float | None = None


class ResearchTaskStore(TaskStore):
    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._tasks: dict[str, _Stored] = {}
        self._changed: dict[str, anyio.Event] = {}

    def _expire(self) -> None:
        now = self._clock.monotonic()
        for task_id, stored in list(self._tasks.items()):
            if stored.expires is not None and now >= stored.expires:
                del self._tasks[task_id]

    async def create_task(self, metadata: TaskMetadata, task_id: str | None = None) -> Task:
        self._expire()
        task = create_task_state(metadata, task_id)
        task.createdAt = task.lastUpdatedAt = self._clock.now()
        if task.taskId in self._tasks:
            raise ValueError(f"Task with ID {task.taskId} already exists")
        self._tasks[task.taskId] = _Stored(task)
        return task.model_copy()

    async def get_task(self, task_id: str) -> Task | None:
        self._expire()
        stored = self._tasks.get(task_id)
        return stored.task.model_copy() if stored else None

    async def update_task(
        self, task_id: str, status: TaskStatus | None = None, status_message: str | None = None
    ) -> Task:
        stored = self._tasks.get(task_id)
        if stored is None:
            raise ValueError(f"Task with ID {task_id} not found")
        task = stored.task
        if status is not None and status != task.status and is_terminal(task.status):
            raise ValueError(f"Cannot transition from terminal status '{task.status}'")
        changed = status is not None and status != task.status
        if status is not None:
            task.status = status
        if status_message is not None:
            task.statusMessage = status_message
        task.lastUpdatedAt = self._clock.now()
        if changed and is_terminal(task.status) and task.ttl is not None:  # None: unlimited
            stored.expires = self._clock.monotonic() + task.ttl / 1000
        if changed:
            await self.notify_update(task_id)
        return task.model_copy()

    async def store_result(self, task_id: str, result: Result) -> None:
        stored = self._tasks.get(task_id)
        if stored is None:
            raise ValueError(f"Task with ID {task_id} not found")
        stored.result = result

    async def get_result(self, task_id: str) -> Result | None:
        stored = self._tasks.get(task_id)
        return stored.result if stored else None

    async def list_tasks(self, cursor: str | None = None) -> tuple[list[Task], str | None]:
        """Every task on one page (the SDK's tasks/list keeps each session's own)."""
        self._expire()
        return [s.task.model_copy() for s in self._tasks.values()], None

    async def delete_task(self, task_id: str) -> bool:
        return self._tasks.pop(task_id, None) is not None

    async def wait_for_update(self, task_id: str) -> None:
        if task_id not in self._tasks:
            raise ValueError(f"Task with ID {task_id} not found")
        await self._changed.setdefault(task_id, anyio.Event()).wait()

    async def notify_update(self, task_id: str) -> None:
        event = self._changed.pop(task_id, None)
        if event is not None:
            event.set()
