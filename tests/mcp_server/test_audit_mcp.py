"""Outside mutation audit (issue 37): MCP behaviours no other test pinned. Each runs
the server's call path with a stubbed session (no LLM, no web)."""

from __future__ import annotations

from typing import Any

import pytest

from deepsearch.agent.result import UsageReport, result_so_far

OPTIONS: dict[str, Any] = {"llm_provider": "openai", "no_cache": True}


def _stub(monkeypatch: pytest.MonkeyPatch, **fields: Any) -> list[Any]:
    """ResearchSession stand-in; what each `execute` saw is appended to the list."""
    seen: list[Any] = []
    usage = UsageReport(prompt_tokens=1, completion_tokens=1, total_tokens=2, budget=10_000)

    class StubSession:
        warnings: list[str] = fields.get("warnings", [])

        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        async def execute(self) -> object:
            seen.append(fields["probe"]() if "probe" in fields else None)
            return result_so_far("q?", "answered", usage, answer="An answer.")

    monkeypatch.setattr("deepsearch.session.ResearchSession", StubSession)
    return seen


async def test_a_history_warning_goes_to_stderr_never_into_the_protocol_stream(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Over stdio, stdout is JSON-RPC alone: a warning line there breaks the client."""
    from deepsearch.mcp_server.app import McpConfig, Progress, call_research

    _stub(monkeypatch, warnings=["the history file is read-only"])
    done = await call_research(McpConfig(OPTIONS, 200_000), {"question": "q?"}, Progress(None))
    out, err = capsys.readouterr()
    assert not done.isError
    assert out == ""
    assert "deepsearch mcp: warning: the history file is read-only" in err


async def test_a_plain_call_takes_one_of_the_research_slots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--max-concurrent counts plain calls and tasks together (tasks.py): while a plain
    call researches, it holds a slot."""
    from mcp.shared.memory import create_connected_server_and_client_session

    from deepsearch.mcp_server.app import McpConfig, build_server
    from deepsearch.mcp_server.tasks import TaskRunner

    runner = TaskRunner(max_concurrent=1)

    def held() -> bool:  # the one slot is taken
        return runner._slots is not None and runner._slots.locked()

    seen = _stub(monkeypatch, probe=held)
    server = build_server(McpConfig(OPTIONS, 200_000), runner)
    async with create_connected_server_and_client_session(server) as client:
        done = await client.call_tool("research", {"question": "q?"})
    assert not done.isError
    assert seen == [True]
    assert not held()


async def test_continue_from_last_means_the_newest_run_of_the_history() -> None:
    """`"last"` is no run id: on an empty history the error says there is no earlier
    run, not that no run is named "last"."""
    from deepsearch.mcp_server.app import McpConfig, Progress, call_research

    config = McpConfig(OPTIONS, 200_000)
    done = await call_research(
        config, {"question": "and then?", "continue_from": "last"}, Progress(None)
    )
    text = str(done.content[0])
    assert done.isError
    assert "no earlier run to continue" in text
    assert "'last'" not in text


def test_a_task_ttl_of_zero_is_no_ttl_and_gets_the_servers_maximum() -> None:
    """A client's TTL of 0 would forget the finished task at once: it asked for none."""
    from deepsearch.mcp_server.tasks import TaskRunner

    runner = TaskRunner(max_ttl=60.0)
    assert runner.ttl_ms(0) == 60_000
    assert runner.ttl_ms(-1) == 60_000
    assert runner.ttl_ms(1) == 1


async def test_a_finished_task_keeps_its_terminal_status() -> None:
    """A cancelled task's research may still return: it must not turn `completed`."""
    from mcp.types import TaskMetadata

    from deepsearch.mcp_server.task_store import ResearchTaskStore

    store = ResearchTaskStore()
    task = await store.create_task(TaskMetadata(ttl=60_000))
    await store.update_task(task.taskId, status="cancelled")
    with pytest.raises(ValueError, match="terminal"):
        await store.update_task(task.taskId, status="completed")
    kept = await store.get_task(task.taskId)
    assert kept is not None and kept.status == "cancelled"


async def test_a_tasks_result_waiter_waits_again_after_each_change() -> None:
    """tasks/result waits while the task runs: after one change wakes the waiters, the
    next wait lasts until the next change (not a busy loop on the old signal)."""
    import asyncio

    from mcp.types import TaskMetadata

    from deepsearch.mcp_server.task_store import ResearchTaskStore

    store = ResearchTaskStore()
    task = await store.create_task(TaskMetadata(ttl=60_000))
    first = asyncio.create_task(store.wait_for_update(task.taskId))
    await asyncio.sleep(0)
    await store.update_task(task.taskId, status="input_required")
    await asyncio.wait_for(first, 5)
    second = asyncio.create_task(store.wait_for_update(task.taskId))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not second.done()
    await store.update_task(task.taskId, status="completed")
    await asyncio.wait_for(second, 5)
