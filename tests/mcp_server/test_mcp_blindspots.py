"""The MCP server's edges, with a stubbed session (no LLM, no search): through the
SDK's own client over its in-memory transport, and at the unit level (tool.py,
app.Progress). Masking of the text result and of argument, configuration and internal
errors; progress sent in order before the result, cleaned up on failure and cancel, a
failed send not breaking the call; the call's knobs over the server's flags; the
budget cap; the question's length limit (100,000 characters); JSON `true` is no
integer; references listed once. (Masking of `structuredContent` and the HTTP Host and
Origin checks are tested with their fixes.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest

from deepsearch.agent.events import StepFinished
from deepsearch.agent.result import Reference
from deepsearch.mcp_server import tool
from deepsearch.session import ResearchSession, empty_result

if TYPE_CHECKING:
    from mcp import ClientSession

    from deepsearch.agent.result import ResearchResult

SECRET = "sk-mcp-blindspot-secret-0123456789"
OPTIONS: dict[str, Any] = {"llm_provider": "openai", "no_cache": True, "budget": 200_000}


def _step(n: int, action: str = "search") -> StepFinished:
    return StepFinished(
        step=n, action=action, think="t", detail=f"detail {n}", tokens_used=10 * n,
        budget=1000, elapsed_s=0.1 * n,
    )  # fmt: skip


def _result(session: ResearchSession, **update: Any) -> ResearchResult:
    base = empty_result(session.question, session.settings, "answered")
    return base.model_copy(update=update)


Run = Callable[[ResearchSession], Any]


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> list[Run]:
    """`run[0]` stands in for ResearchSession.execute (set by each test)."""
    holder: list[Run] = []

    async def execute(session: ResearchSession) -> Any:
        return await holder[0](session)

    monkeypatch.setattr(ResearchSession, "execute", execute)
    return holder


@asynccontextmanager
async def client(max_budget: int = 200_000, **options: Any) -> AsyncIterator[ClientSession]:
    from mcp.shared.memory import create_connected_server_and_client_session

    from deepsearch.mcp_server.app import McpConfig, build_server

    config = McpConfig(options={**OPTIONS, **options}, max_budget=max_budget, secrets=[SECRET])
    async with create_connected_server_and_client_session(build_server(config)) as session:
        yield session


def _text(result: Any) -> str:
    assert len(result.content) == 1
    return str(result.content[0].text)


# ---------------------------------------------------------------- through the client


async def test_the_answer_text_is_masked(run: list[Run]) -> None:
    async def answer(session: ResearchSession) -> Any:
        return _result(session, answer=f"The key is {SECRET}.")

    run.append(answer)
    async with client() as session:
        result = await session.call_tool("research", {"question": "Q?"})
    assert not result.isError
    assert _text(result) == "The key is ****."


async def test_an_internal_error_is_one_masked_line_and_the_server_goes_on(
    run: list[Run],
) -> None:
    calls: list[str] = []

    async def crash(session: ResearchSession) -> Any:
        calls.append(session.question)
        if len(calls) == 1:
            raise RuntimeError(f"boom with {SECRET}")
        return _result(session, answer="fine")

    run.append(crash)
    async with client() as session:
        broken = await session.call_tool("research", {"question": "Q?"})
        after = await session.call_tool("research", {"question": "Q2?"})
    assert broken.isError
    assert _text(broken) == "error: internal error: RuntimeError: boom with ****"
    assert not after.isError and _text(after) == "fine"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"question": "Q?", SECRET: 1}, "error: ****: unknown argument (known: question, "),
        ({"question": "Q?", "language": SECRET, "max_steps": 0}, "error: max_steps: "),
        ({"question": ""}, "error: question: a non-empty string is required"),
    ],
)
async def test_argument_and_configuration_errors_are_masked_results(
    run: list[Run], arguments: dict[str, Any], message: str
) -> None:
    async def never(session: ResearchSession) -> Any:
        raise AssertionError("no run for a bad call")

    run.append(never)
    async with client() as session:
        result = await session.call_tool("research", arguments)
    assert result.isError
    text = _text(result)
    assert text.startswith(message.replace(f"{SECRET}", "****")), text
    assert SECRET not in text


async def test_a_configuration_error_of_the_run_is_a_result(run: list[Run]) -> None:
    from deepsearch.errors import ConfigError

    async def refuse(session: ResearchSession) -> Any:
        raise ConfigError(f"no usable search provider ({SECRET})")

    run.append(refuse)
    async with client() as session:
        result = await session.call_tool("research", {"question": "Q?"})
    assert result.isError
    assert _text(result) == "error: no usable search provider (****)"
    assert result.structuredContent is not None
    assert result.structuredContent["error_kind"] == "configuration"


async def test_the_calls_knobs_win_over_the_servers_flags_and_the_budget_is_capped(
    run: list[Run],
) -> None:
    seen: list[Any] = []

    async def record(session: ResearchSession) -> Any:
        seen.append(session.settings)
        return _result(session, answer="a")

    run.append(record)
    async with client(max_budget=50_000, max_steps=5, language="de") as session:
        await session.call_tool("research", {"question": "Q?", "max_steps": 9})
        await session.call_tool("research", {"question": "Q?", "budget": 80_000})
        await session.call_tool("research", {"question": "Q?", "budget": 20_000})
    assert seen[0].agent.max_steps == 9 and seen[0].agent.language == "de"
    assert seen[0].agent.token_budget == 50_000  # the server's 200,000, capped
    assert seen[1].agent.token_budget == 50_000
    assert seen[2].agent.token_budget == 20_000  # under the cap: the call's own


async def test_progress_goes_out_in_order_before_the_result(run: list[Run]) -> None:
    async def steps(session: ResearchSession) -> Any:
        for n, action in enumerate(["search", "visit", "answer"], start=1):
            session.emit(_step(n, action))
        return _result(session, answer="done")

    run.append(steps)
    messages: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        await asyncio.sleep(0)  # a slow client: the result must still wait for these
        messages.append(f"{progress:g} {message}")

    async with client() as session:
        result = await session.call_tool(
            "research", {"question": "Q?"}, progress_callback=on_progress
        )
        arrived = list(messages)  # what had arrived when the result did
    assert _text(result) == "done"
    assert [m.split()[:3] for m in arrived] == [
        ["1", "1", "search"],
        ["2", "2", "visit"],
        ["3", "3", "answer"],
    ]


# ---------------------------------------------------------------- Progress, unit level


async def test_progress_sends_every_step_before_the_block_ends() -> None:
    from deepsearch.mcp_server.app import Progress

    sent: list[tuple[int, str]] = []

    async def send(count: int, line: str) -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        sent.append((count, line.split()[1]))

    progress = Progress(send)
    async with progress:
        progress(_step(1, "search"))
        progress(_step(2, "visit"))
        progress.__call__(empty_result)  # type: ignore[arg-type]  # not a step: nothing
    assert sent == [(1, "search"), (2, "visit")]


@pytest.mark.parametrize("failure", [RuntimeError("run failed"), asyncio.CancelledError()])
async def test_progress_stops_its_task_when_the_call_fails_or_is_cancelled(
    failure: BaseException,
) -> None:
    from deepsearch.mcp_server.app import Progress

    async def send(count: int, line: str) -> None:
        return None

    progress = Progress(send)
    with pytest.raises(type(failure)):
        async with progress:
            raise failure
    task = progress._task
    assert task is not None
    await asyncio.sleep(0)
    assert task.cancelled()


async def test_a_failed_progress_send_does_not_break_the_call() -> None:
    from deepsearch.mcp_server.app import Progress

    tries: list[int] = []

    async def send(count: int, line: str) -> None:
        tries.append(count)
        raise ConnectionResetError("client gone")

    progress = Progress(send)
    async with progress:
        progress(_step(1))
        progress(_step(2))
    assert tries == [1]  # the first failure ends the sending, not the call


async def test_no_token_no_task() -> None:
    from deepsearch.mcp_server.app import Progress

    progress = Progress(None)
    async with progress:
        progress(_step(1))
    assert progress._task is None and progress.count == 0


# ---------------------------------------------------------------- tool.py, unit level


def test_a_question_of_100000_characters_is_taken_and_one_more_refused() -> None:
    assert tool.MAX_QUESTION_CHARS == 100_000
    question, _ = tool.parse_arguments({"question": "q" * 100_000})
    assert len(question) == 100_000
    with pytest.raises(tool.ArgumentError) as caught:
        tool.parse_arguments({"question": "q" * 100_001})
    assert str(caught.value) == "question: longer than 100000 characters"
    assert tool.input_schema()["properties"]["question"]["maxLength"] == 100_000


@pytest.mark.parametrize(
    ("name", "value", "ok"),
    [
        ("max_steps", True, False),
        ("max_steps", 3.5, False),
        ("max_steps", "3", False),
        ("max_steps", 3, True),
        ("min_confidence", True, False),
        ("min_confidence", 1, True),
        ("min_confidence", 0.5, True),
        ("no_direct_answer", 1, False),
        ("no_direct_answer", True, True),
        ("language", 5, False),
        ("language", "fr", True),
    ],
)
def test_json_types_of_the_knobs(name: str, value: object, ok: bool) -> None:
    arguments = {"question": " Who \n wrote it? ", name: value}
    if ok:
        assert tool.parse_arguments(arguments) == ("Who wrote it?", {name: value})
        return
    with pytest.raises(tool.ArgumentError) as caught:
        tool.parse_arguments(arguments)
    kind = {"max_steps": "integer", "min_confidence": "number"}.get(name)
    kind = kind or {"no_direct_answer": "boolean", "language": "string"}[name]
    assert str(caught.value) == f"{name}: must be {kind}"


@pytest.mark.parametrize("arguments", [None, {}, {"question": "   "}, {"question": 7}])
def test_a_missing_question_is_named(arguments: dict[str, Any] | None) -> None:
    with pytest.raises(tool.ArgumentError) as caught:
        tool.parse_arguments(arguments)
    assert str(caught.value) == "question: a non-empty string is required"


def test_call_settings_layers_and_caps() -> None:
    settings = tool.call_settings({"max_steps": 5, "budget": 90_000}, {"max_steps": 9}, 100_000)
    assert settings.agent.max_steps == 9 and settings.agent.token_budget == 90_000
    capped = tool.call_settings({"budget": 90_000}, {"budget": 150_000}, 100_000)
    assert capped.agent.token_budget == 100_000
    at_cap = tool.call_settings({}, {"budget": 100_000}, 100_000)
    assert at_cap.agent.token_budget == 100_000


def _with_refs(answer: str, **update: Any) -> ResearchResult:
    refs = [
        Reference(url="https://a.example/1", title="A", quote="qa"),
        Reference(url="https://b.example/2", title="", quote="qb"),
    ]
    base = empty_result("Q?", tool.call_settings({}, {}, 10**6), "answered")
    return base.model_copy(update={"answer": answer, "references": refs, **update})


def test_references_are_listed_once() -> None:
    listed = tool.text(_with_refs("Paris.[^1]"))
    assert listed == (
        "Paris.[^1]\n\n[^1]: A — https://a.example/1\n[^2]: https://b.example/2 — "
        "https://b.example/2"
    )
    own = "Paris.[^1]\n\n[^1]: A, https://a.example/1"
    assert tool.text(_with_refs(own)) == own  # the finalizer's lines: not listed again


def test_an_error_result_leads_with_its_line() -> None:
    failed = _with_refs("", status="failed", error="LLM down", error_kind="fatal")
    failed = failed.model_copy(update={"references": []})
    assert tool.text(failed) == "error: LLM down"
    partial = _with_refs("Half.", status="failed", error="LLM down", error_kind="fatal")
    assert tool.text(partial).startswith("error: LLM down\n\nHalf.\n\n[^1]: A")
    nothing = _with_refs("", status="not_found", error=None).model_copy(update={"references": []})
    assert tool.text(nothing) == "error: no answer was found"
    out = tool.output(partial)
    assert [r.url for r in out.references] == ["https://a.example/1", "https://b.example/2"]
    assert out.error == "LLM down" and out.error_kind == "fatal" and out.status == "failed"


async def test_the_server_and_its_one_tool_as_a_client_sees_them(run: list[Run]) -> None:
    from deepsearch.version import __version__

    async with client() as session:
        listed = await session.list_tools()
        unknown = await session.call_tool("search", {"question": "Q?"})
    [research] = listed.tools
    assert (research.name, research.title) == ("research", "Deep research")
    assert research.description == (
        "Research a question on the web (search, read, reason, check) and return one "
        "answer with numbered, verbatim-quoted references. Takes minutes; reports "
        "progress per step."
    )
    assert research.inputSchema == tool.input_schema()
    assert research.outputSchema == tool.output_schema()
    assert unknown.isError
    assert _text(unknown) == "error: unknown tool 'search' (this server has 'research')"
    from deepsearch.mcp_server.app import McpConfig, build_server

    server = build_server(McpConfig(options=OPTIONS, max_budget=1))
    assert (server.name, server.version) == ("deepsearch", __version__)


def test_the_input_schema_states_each_knobs_type_and_bounds() -> None:
    from deepsearch.commands.research_options import OPTIONS as TABLE

    schema = tool.input_schema()
    assert schema["required"] == ["question"] and schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["question"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 100_000,
        "description": "The question to research; one cited answer comes back.",
    }
    assert set(props) == {"question", *tool.KNOBS}
    expected = {
        "effort": ("string", {"enum": ["high", "low", "medium"]}),
        "budget": ("integer", {"minimum": 10_000}),
        "max_steps": ("integer", {"minimum": 1}),
        "timeout": ("number", {"exclusiveMinimum": 0}),
        "team_size": ("integer", {"minimum": 1, "maximum": 8}),
        "language": ("string", {}),
        "max_references": ("integer", {"minimum": 0, "maximum": 50}),
        "min_confidence": ("number", {"minimum": 0, "maximum": 1}),
        "no_direct_answer": ("boolean", {}),
        "boost_hostnames": ("string", {}),
        "bad_hostnames": ("string", {}),
        "only_hostnames": ("string", {}),
    }
    help_of = {row.name: row.help for row in TABLE}
    for name, (kind, bounds) in expected.items():
        assert props[name] == {"type": kind, "description": help_of[name], **bounds}, name


def test_the_answers_trailing_space_goes_before_the_list() -> None:
    listed = tool.text(_with_refs("  Paris.[^1]  \n\n"))
    assert listed.startswith("  Paris.[^1]\n\n[^1]: A — https://a.example/1")


def test_every_kind_of_bound_has_its_json_schema_keyword() -> None:
    from types import SimpleNamespace

    from deepsearch.config.models import Bounds

    row = SimpleNamespace(bounds=Bounds(ge=1.0, gt=0.0, le=9.0, lt=10.0))
    assert tool._schema_bounds(row) == {  # type: ignore[arg-type]
        "minimum": 1.0,
        "exclusiveMinimum": 0.0,
        "maximum": 9.0,
        "exclusiveMaximum": 10.0,
    }
    assert tool.input_schema()["type"] == "object"


def test_an_unknown_argument_lists_the_known_ones() -> None:
    with pytest.raises(tool.ArgumentError) as caught:
        tool.parse_arguments({"question": "Q?", "model": "x"})
    assert str(caught.value) == (
        "model: unknown argument (known: question, effort, budget, max_steps, timeout, "
        "team_size, language, max_references, min_confidence, no_direct_answer, "
        "boost_hostnames, bad_hostnames, only_hostnames, max_cost, continue_from)"
    )
