"""Provider resolution order and client construction."""

from __future__ import annotations

import pytest

from deepsearch.errors import ConfigError
from deepsearch.llm.factory import build_llm_client, probe_local_server, resolve_provider
from deepsearch.llm.gemini_provider import GeminiProvider
from deepsearch.llm.openai_provider import OpenAIProvider
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.ports import refused_url
from tests.fakes.scripted_llm import offline_settings


def _never(url: str) -> bool:
    return False


def _always(url: str) -> bool:
    return True


def closed_port_url() -> str:
    """A port that refuses connections, held by this process (tests/fakes/ports.py)."""
    return refused_url()


def test_explicit_provider_wins_even_over_keys() -> None:
    settings = offline_settings(
        **{"llm.provider": "openai", "keys.openai_api_key": "o", "keys.gemini_api_key": "g"}
    )
    assert resolve_provider(settings, probe=_never) == "openai"


@pytest.mark.parametrize(
    ("provider", "env"), [("openai", "OPENAI_API_KEY"), ("gemini", "GEMINI_API_KEY")]
)
def test_explicit_provider_without_its_key_names_the_variable(provider: str, env: str) -> None:
    settings = offline_settings(**{"llm.provider": provider})
    with pytest.raises(ConfigError, match=env):
        resolve_provider(settings, probe=_always)


def test_explicit_ollama_needs_no_key_and_no_probe() -> None:
    assert (
        resolve_provider(offline_settings(**{"llm.provider": "ollama"}), probe=_never) == "ollama"
    )


def test_gemini_then_openai_then_local_server() -> None:
    both = offline_settings(**{"keys.openai_api_key": "o", "keys.gemini_api_key": "g"})
    assert resolve_provider(both, probe=_always) == "gemini"
    assert (
        resolve_provider(offline_settings(**{"keys.openai_api_key": "o"}), probe=_always)
        == "openai"
    )
    probed: list[str] = []

    def probe(url: str) -> bool:
        probed.append(url)
        return True

    assert resolve_provider(offline_settings(), probe=probe) == "ollama"
    assert probed == ["http://127.0.0.1:11434"]


def test_no_provider_is_one_clear_line() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_provider(offline_settings(), probe=_never)
    message = str(info.value)
    assert "\n" not in message
    for needle in ("GEMINI_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "Ollama", "11434"):
        assert needle in message


def test_probe_against_a_real_loopback_server() -> None:
    with FakeOpenAIServer() as server:
        assert probe_local_server(server.url)
        assert probe_local_server(server.base_url)  # a /v1 suffix is tolerated
        assert server.requests[0].path == "/v1/models"
    assert not probe_local_server(closed_port_url())


def test_build_client_picks_the_provider_lazily() -> None:
    settings = offline_settings(
        **{"keys.openai_api_key": "o", "llm.openai_base_url": "http://127.0.0.1:9/v1"}
    )
    client = build_llm_client(settings, TokenTracker(1000), probe=_never)
    assert isinstance(client.provider, OpenAIProvider)
    assert client.provider.base_url == "http://127.0.0.1:9/v1" and client.embedder is None
    assert client.provider._client is None, "no SDK client until the first call"

    gem = build_llm_client(
        offline_settings(**{"keys.gemini_api_key": "g", "llm.embedding_model": "e"}),
        TokenTracker(1000),
    )
    assert isinstance(gem.provider, GeminiProvider) and gem.embedder is gem.provider

    local = build_llm_client(
        offline_settings(**{"llm.ollama_url": "http://127.0.0.1:11434/"}),
        TokenTracker(1000),
        provider_name="ollama",
    )
    assert local.provider.base_url == "http://127.0.0.1:11434/v1"
    assert local.provider_name == "ollama"


def test_base_url_alone_chooses_openai_before_the_local_probe() -> None:
    probed: list[str] = []

    def probe(url: str) -> bool:
        probed.append(url)
        return True

    keyless = offline_settings(**{"llm.openai_base_url": "http://127.0.0.1:9/v1"})
    assert resolve_provider(keyless, probe=probe) == "openai" and probed == []
    # keys still come first
    gem = offline_settings(
        **{"llm.openai_base_url": "http://127.0.0.1:9/v1", "keys.gemini_api_key": "g"}
    )
    assert resolve_provider(gem, probe=probe) == "gemini"


def test_explicit_openai_with_a_base_url_needs_no_key() -> None:
    settings = offline_settings(
        **{"llm.provider": "openai", "llm.openai_base_url": "http://127.0.0.1:9/v1"}
    )
    assert resolve_provider(settings, probe=_never) == "openai"
    provider = build_llm_client(settings, TokenTracker(1000), probe=_never).provider
    assert isinstance(provider, OpenAIProvider) and provider._api_key == "not-needed"


def test_official_endpoint_without_a_key_is_still_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        resolve_provider(offline_settings(**{"llm.provider": "openai"}), probe=_always)
    # a real key is sent as is, never replaced by the placeholder
    keyed = offline_settings(
        **{"keys.openai_api_key": "sk-real", "llm.openai_base_url": "http://127.0.0.1:9/v1"}
    )
    assert OpenAIProvider.from_settings(keyed, "openai")._api_key == "sk-real"


def test_no_provider_message_masks_a_password_in_the_ollama_url() -> None:
    settings = offline_settings(**{"llm.ollama_url": "http://u:hunter22@127.0.0.1:9"})
    with pytest.raises(ConfigError) as info:
        resolve_provider(settings, probe=_never)
    assert "hunter22" not in str(info.value) and "u:****@" in str(info.value)
