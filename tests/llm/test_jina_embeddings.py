"""Jina embeddings over httpx against a loopback server speaking Jina's JSON shape."""

from __future__ import annotations

import pytest

from deepsearch.errors import ProviderAuthError, ProviderError
from deepsearch.llm.factory import build_llm_client
from deepsearch.llm.jina_embeddings import JinaEmbeddings
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.loopback import HTTPReply, LoopbackJSONServer, RecordedRequest
from tests.fakes.scripted_llm import offline_settings

KEY = "jina_secret_key_123456"


class FakeJina(LoopbackJSONServer):
    def __init__(self, *, status: int = 200, drop_one: bool = False) -> None:
        super().__init__()
        self.status = status
        self.drop_one = drop_one

    def respond(self, request: RecordedRequest) -> HTTPReply:
        if self.status != 200:
            return HTTPReply(self.status, {"detail": "nope"})
        texts = request.body["input"]
        rows = [{"index": i, "embedding": [float(len(t)), float(i)]} for i, t in enumerate(texts)]
        rows.reverse()  # the API may answer out of order: `index` is what counts
        if self.drop_one:
            rows = rows[1:]
        return HTTPReply(200, {"data": rows, "usage": {"total_tokens": 7 * len(texts)}})


async def test_vectors_in_input_order_with_usage_and_auth_header() -> None:
    with FakeJina() as server:
        jina = JinaEmbeddings(api_key=KEY, model="jina-embeddings-v3", base_url=server.url)
        got = await jina.embed_with_usage(["a", "bbb"])
    assert got.vectors == [[1.0, 0.0], [3.0, 1.0]] and got.prompt_tokens == 14
    sent = server.requests[0]
    assert sent.path == "/v1/embeddings" and sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body == {
        "model": "jina-embeddings-v3",
        "input": ["a", "bbb"],
        "task": "text-matching",
    }


async def test_rejected_key_names_the_variable_and_hides_the_key() -> None:
    with FakeJina(status=401) as server:
        jina = JinaEmbeddings(api_key=KEY, model="m", base_url=server.url)
        with pytest.raises(ProviderAuthError) as info:
            await jina.embed(["a"])
    assert "JINA_API_KEY" in str(info.value) and KEY not in str(info.value)


async def test_a_missing_vector_is_an_error_not_a_misaligned_result() -> None:
    with FakeJina(drop_one=True) as server:
        jina = JinaEmbeddings(api_key=KEY, model="m", base_url=server.url)
        with pytest.raises(ProviderError):
            await jina.embed(["a", "b"])


async def test_client_uses_jina_when_configured_and_budgets_it() -> None:
    with FakeJina() as server:
        settings = offline_settings(
            **{
                "llm.jina_embedding_model": "jina-embeddings-v3",
                "llm.jina_embedding_url": server.url,
                "keys.jina_api_key": KEY,
                "keys.openai_api_key": "sk-test",
            }
        )
        client = build_llm_client(settings, TokenTracker(10_000))
        vectors = await client.embed(["one", "two", "three"])
    assert vectors is not None and len(vectors) == 3
    assert client.tracker.by_tool()["embedding"].prompt_tokens == 21  # the server's count


def test_no_jina_key_means_no_embedder() -> None:
    settings = offline_settings(
        **{"llm.jina_embedding_model": "jina-embeddings-v3", "keys.openai_api_key": "sk-test"}
    )
    assert build_llm_client(settings, TokenTracker(10_000)).embedder is None
