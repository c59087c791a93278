"""Jina embeddings (`POST {base}/v1/embeddings`), for similarity when the LLM provider
offers none or the user prefers Jina's. Plain httpx over an injectable client."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deepsearch.errors import ProviderAuthError, ProviderError
from deepsearch.llm.provider_common import Embeddings

if TYPE_CHECKING:
    import httpx

DEFAULT_URL = "https://api.jina.ai"


class JinaEmbeddings:
    """`embed`/`embed_with_usage` over Jina's embeddings API (task: text-matching)."""

    name = "jina"

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str = DEFAULT_URL,
        timeout_s: float = 30,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._key = api_key
        self.model = model
        self._url = base_url.rstrip("/") + "/v1/embeddings"
        self._timeout = timeout_s
        self._client = client

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return (await self.embed_with_usage(texts)).vectors

    async def embed_with_usage(self, texts: Sequence[str]) -> Embeddings:
        import httpx

        from deepsearch.web.tls import client_context

        client = self._client or httpx.AsyncClient(timeout=self._timeout, verify=client_context())
        try:
            response = await client.post(
                self._url,
                json={"model": self.model, "input": list(texts), "task": "text-matching"},
                headers={"Authorization": f"Bearer {self._key}", "Accept": "application/json"},
            )
        except httpx.HTTPError as exc:
            raise ProviderError(
                f"cannot reach Jina embeddings: {type(exc).__name__}",
                provider="jina",
                model=self.model,
            ) from None
        finally:
            if self._client is None:
                await client.aclose()
        if response.status_code in (401, 403):
            raise ProviderAuthError(
                f"Jina rejected the key (HTTP {response.status_code}): check JINA_API_KEY",
                provider="jina",
                model=self.model,
            )
        if response.status_code >= 400:
            raise ProviderError(
                f"Jina embeddings answered HTTP {response.status_code}",
                provider="jina",
                model=self.model,
            )
        return _parse(response.json(), len(texts), self.model)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def _parse(body: Any, expected: int, model: str) -> Embeddings:
    """Vectors in input order (the API returns an `index` per item) and the usage."""
    try:
        rows = sorted(body["data"], key=lambda row: row["index"])
        vectors = [[float(x) for x in row["embedding"]] for row in rows]
    except (KeyError, TypeError, ValueError):
        raise ProviderError(
            "Jina embeddings: unexpected reply shape", provider="jina", model=model
        ) from None
    if len(vectors) != expected:
        raise ProviderError(
            f"Jina embeddings: {len(vectors)} vectors for {expected} inputs",
            provider="jina",
            model=model,
        )
    usage = body.get("usage") or {}
    tokens = usage.get("total_tokens") or usage.get("prompt_tokens")
    return Embeddings(vectors=vectors, prompt_tokens=int(tokens) if tokens else None)
