"""`ping()` (the doctor's endpoint check) and the per-instance output-mode memory."""

from __future__ import annotations

import json

import pytest

from deepsearch.errors import ProviderAuthError, ProviderError
from deepsearch.llm.base import LLMProvider
from tests.fakes.gemini_server import FakeGeminiServer
from tests.fakes.loopback import HTTPReply, RecordedRequest
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.ports import refused_url
from tests.fakes.scripted_llm import scripted_client
from tests.llm.helpers import ASK, SECRET, Answer, gemini_client, openai_client

GOOD = {"answer": "42", "confidence": 0.5}


def closed_port_url() -> str:
    """A port that refuses connections, held by this process (tests/fakes/ports.py)."""
    return refused_url()


class RefusingGemini(FakeGeminiServer):
    """Answers the model listing with 403, echoing the key, as a bad key would get."""

    def respond(self, request: RecordedRequest) -> HTTPReply:
        if request.method == "GET" and "/models" in request.path:
            error = {"code": 403, "message": f"bad key {SECRET}", "status": "PERMISSION_DENIED"}
            return HTTPReply(403, {"error": error})
        return super().respond(request)


async def test_openai_ping_lists_models_and_spends_nothing(
    openai_server: FakeOpenAIServer,
) -> None:
    client, provider = openai_client(openai_server.base_url)
    assert isinstance(provider, LLMProvider)
    await client.ping()
    assert [(r.method, r.path) for r in openai_server.requests] == [("GET", "/v1/models")]
    assert client.tracker.used == 0


async def test_openai_ping_bad_key_is_a_typed_auth_error() -> None:
    with FakeOpenAIServer(api_key="the-right-key") as server:
        client, _ = openai_client(server.base_url)
        with pytest.raises(ProviderAuthError) as info:
            await client.ping()
    assert "OPENAI_API_KEY" in str(info.value) and SECRET not in str(info.value)
    assert info.value.provider == "openai"


async def test_openai_ping_unreachable_is_a_provider_error() -> None:
    client, _ = openai_client(closed_port_url() + "/v1")
    with pytest.raises(ProviderError, match="cannot reach openai") as info:
        await client.ping()
    assert not isinstance(info.value, ProviderAuthError)


async def test_gemini_ping_lists_models(gemini_server: FakeGeminiServer) -> None:
    client, provider = gemini_client(gemini_server.url)
    assert isinstance(provider, LLMProvider)
    await client.ping()
    assert [r.method for r in gemini_server.requests] == ["GET"]
    assert "/models" in gemini_server.requests[0].path


async def test_gemini_ping_refused_key_is_a_typed_auth_error() -> None:
    with RefusingGemini() as server:
        client, _ = gemini_client(server.url)
        with pytest.raises(ProviderAuthError) as info:
            await client.ping()
    message = str(info.value)
    assert "GEMINI_API_KEY" in message and SECRET not in message
    assert "for model" not in message  # a listing names no model


async def test_scripted_provider_ping_answers() -> None:
    client, provider = scripted_client(lambda request: GOOD)
    assert isinstance(provider, LLMProvider)
    await client.ping()
    assert provider.calls == []


async def test_openai_mode_memory_is_per_instance(openai_server: FakeOpenAIServer) -> None:
    openai_server.reject_json_schema = True
    openai_server.enqueue(*[json.dumps(GOOD)] * 3)
    first, _ = openai_client(openai_server.base_url)
    await first.generate_object("agent", Answer, "s", ASK)
    assert len(openai_server.chat_requests) == 2  # json_schema rejected, then json_object

    # A new provider (a new run) starts the ladder again, against the same server.
    second, provider = openai_client(openai_server.base_url)
    assert provider.output_modes.remembered == {}
    await second.generate_object("agent", Answer, "s", ASK)
    kinds = [r.body["response_format"]["type"] for r in openai_server.chat_requests]
    assert kinds == ["json_schema", "json_object", "json_schema", "json_object"]


async def test_gemini_mode_memory_is_per_instance(gemini_server: FakeGeminiServer) -> None:
    gemini_server.reject_json_schema = True
    gemini_server.enqueue(*[json.dumps(GOOD)] * 3)
    first, provider = gemini_client(gemini_server.url)
    await first.generate_object("agent", Answer, "s", ASK)
    assert provider.output_modes.remembered == {"gemini-2.5-flash": "json_object"}

    second, fresh = gemini_client(gemini_server.url)
    assert fresh.output_modes.remembered == {}
    await second.generate_object("agent", Answer, "s", ASK)
    configs = [r.body["generationConfig"] for r in gemini_server.generate_requests]
    assert ["responseJsonSchema" in c for c in configs] == [True, False, True, False]
