"""The output-mode ladder against servers nobody here wrote (tests/fakes/local_servers.py),
through the real `openai` SDK: llama-cpp-python's HTTP 500 for json_schema is a refused
mode met once (one POST, no SDK retries), the working rung is remembered on disk per
server and model, and Ollama gets its native structured outputs."""

from __future__ import annotations

import json
from pathlib import Path

from deepsearch.agent.schema import ACTION_ORDER, step_schema
from deepsearch.llm.base import CompletionRequest
from deepsearch.llm.client import LLMClient
from deepsearch.llm.openai_provider import OpenAIProvider
from deepsearch.llm.rung_memory import RungMemory
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.local_servers import FakeLlamaCppPythonServer, FakeOllamaServer
from tests.fakes.scripted_llm import offline_settings
from tests.fakes.weak_model import weaken
from tests.llm.helpers import ASK

SEARCH = {"think": "look", "action": {"search": {"queries": ["moons of mars"]}}}


def client_for(server_url: str, memory: RungMemory, *, name: str = "openai") -> LLMClient:
    provider = OpenAIProvider(
        api_key="x", base_url=server_url, max_retries=3, name=name, rung_memory=memory
    )
    return LLMClient(
        provider=provider,
        provider_name="ollama" if name == "ollama" else "openai",
        settings=offline_settings(),
        tracker=TokenTracker(1_000_000),
    )


async def test_llama_cpp_python_500_is_met_once_and_the_rung_is_remembered(tmp_path: Path) -> None:
    memory_file = tmp_path / "output-modes.json"
    schema = step_schema(ACTION_ORDER)
    with FakeLlamaCppPythonServer(handler=lambda body: SEARCH) as server:
        client = client_for(server.base_url, RungMemory(memory_file))
        for _ in range(3):
            step = await client.generate_object("agent", schema, "s", ASK)
            assert step.value.payload().queries == ["moons of mars"]  # type: ignore[union-attr]
        # One POST for the refused rung (max_retries=3: the SDK did not retry the 500).
        assert server.refused_posts == 1 and len(server.chat_requests) == 4
        ladder = client.provider.output_modes  # type: ignore[attr-defined]
        assert ladder.remembered == {"gpt-4o-mini": "json_object_schema"}
        assert ladder.why["gpt-4o-mini"] == "refuses response_format json_schema (HTTP 500)"
        sent = server.chat_requests[-1].body["response_format"]
        assert sent["type"] == "json_object" and sent["schema"]["properties"]["think"]["maxLength"]
        await client.aclose()
        # The next run (a new provider, the same file) starts on the remembered rung.
        again = client_for(server.base_url, RungMemory(memory_file))
        await again.generate_object("agent", schema, "s", ASK)
        assert server.refused_posts == 1 and len(server.chat_requests) == 5
        await again.aclose()
    stored = json.loads(memory_file.read_text("utf-8"))
    assert [v["mode"] for v in stored.values()] == ["json_object_schema"]


async def test_concurrent_first_calls_climb_once(tmp_path: Path) -> None:
    import asyncio

    with FakeLlamaCppPythonServer(handler=lambda body: SEARCH) as server:
        client = client_for(server.base_url, RungMemory(tmp_path / "m.json"))
        schema = step_schema(ACTION_ORDER)
        await asyncio.gather(*(client.generate_object("agent", schema, "s", ASK) for _ in range(4)))
        assert server.refused_posts == 1
        await client.aclose()


async def test_a_plain_500_is_still_retried_by_the_sdk(tmp_path: Path) -> None:
    from tests.fakes.openai_server import Reply

    with FakeLlamaCppPythonServer() as server:
        server.enqueue(Reply.error(500, "out of memory"), json.dumps(SEARCH))
        client = client_for(server.base_url, RungMemory(tmp_path / "m.json"))
        pauses: list[float] = []

        async def pause(seconds: float) -> None:  # recorded, not waited out
            pauses.append(seconds)

        assert isinstance(client.provider, OpenAIProvider)
        client.provider.wire.sleep = pause
        request = CompletionRequest(
            tool="agent",
            settings=offline_settings().tool_settings("openai", "agent"),
            system="s",
            messages=ASK,
        )
        assert (await client.provider.complete(request)).text == json.dumps(SEARCH)
        assert len(server.chat_requests) == 2  # an outage, not a refusal: retried
        assert len(pauses) == 1 and 0.375 <= pauses[0] <= 0.5  # after the usual backoff
        await client.aclose()


async def test_ollama_gets_its_native_format_with_the_limits_kept(tmp_path: Path) -> None:
    with FakeOllamaServer(handler=lambda body: SEARCH) as server:
        client = client_for(server.base_url, RungMemory(tmp_path / "m.json"), name="ollama")
        step = await client.generate_object("agent", step_schema(ACTION_ORDER), "s", ASK)
        assert step.value.payload().action == "search"
        sent = server.chat_requests[0].body["response_format"]
        assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is False
        (grammar,) = server.grammar_schemas
        assert grammar["properties"]["think"]["maxLength"] == 600
        await client.aclose()


def test_the_weak_model_sends_null_where_a_loose_schema_allows_it() -> None:
    # The schema deepsearch sent before the action union: payloads nullable.
    loose = {
        "type": "object",
        "properties": {
            "think": {"type": "string"},
            "action": {"enum": ["search", "answer"]},
            "search": {"anyOf": [{"type": "object", "properties": {}}, {"type": "null"}]},
        },
        "required": ["think", "action", "search"],
    }
    flat = {"think": "t", "action": "search", "search": {"queries": ["q"]}}
    assert weaken(flat, loose) == {"think": "t", "action": "search", "search": None}
    tight = to_grammar(step_schema(("search", "answer")).model_json_schema())
    assert weaken(SEARCH, tight) == SEARCH


def to_grammar(schema: dict) -> dict:
    from deepsearch.llm.schema_dialects import GRAMMAR, to_dialect

    return to_dialect(schema, GRAMMAR)


def test_a_server_error_is_a_refused_mode_only_when_it_names_the_request_field() -> None:
    """Found in review: a crash whose traceback said "unknown schema" (HTTP 500) was
    taken for a refused rung, and the downgrade was remembered across runs."""
    from deepsearch.llm.refusals import names_structured_output
    from tests.fakes.local_servers import LITERAL_ERROR

    crash = "fake crashed: AssertionError('unknown schema Ping')"
    assert not names_structured_output(crash, status=500)
    assert names_structured_output(LITERAL_ERROR, status=500)  # llama-cpp-python's 500
    assert names_structured_output("this schema is not supported", status=400)
