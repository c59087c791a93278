"""The process's TLS client context (web/tls.py): httpx's own, its CA bundle loaded at
the first wrap, one per CA choice."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import httpx
import pytest

from deepsearch.llm.openai_wire import unreadable_ca_bundle
from deepsearch.web import tls
from deepsearch.web.tls import CABundleError, DeferredCAContext, client_context

SETTINGS = (
    "protocol",
    "verify_mode",
    "check_hostname",
    "options",
    "verify_flags",
    "minimum_version",
    "maximum_version",
    "keylog_filename",
    "post_handshake_auth",
    "hostname_checks_common_name",
    "security_level",
)


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tls, "_CONTEXTS", {})


@pytest.mark.parametrize("trust_env", [True, False])
def test_the_context_is_the_one_httpx_would_make_once_loaded(trust_env: bool) -> None:
    ours, httpx_own = (
        client_context(trust_env=trust_env),
        httpx.create_ssl_context(trust_env=trust_env),
    )
    for name in SETTINGS:
        assert getattr(ours, name) == getattr(httpx_own, name), name
    assert ours.cert_store_stats()["x509_ca"] == 0  # nothing loaded yet
    ours.load_now()
    assert ours.cert_store_stats() == httpx_own.cert_store_stats()
    assert ours.get_ca_certs() == httpx_own.get_ca_certs()


def test_the_ca_bundle_loads_at_the_first_wrap_only() -> None:
    context = client_context()
    assert not context.loaded
    context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="example.com")
    assert context.loaded
    assert context.cert_store_stats()["x509_ca"] > 0


def test_one_context_per_ca_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    import certifi

    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    assert client_context() is client_context()
    assert client_context(trust_env=False)._locations == (certifi.where(), None)
    monkeypatch.delenv("SSL_CERT_FILE")
    monkeypatch.setenv("SSL_CERT_DIR", "/nowhere")
    assert client_context()._locations == (None, "/nowhere")  # the environment changed


def test_a_bad_ca_file_fails_the_handshake_not_the_client() -> None:
    context = DeferredCAContext(cafile="/nonexistent/ca.pem")
    with pytest.raises(OSError):
        context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="example.com")


def test_an_unreadable_ca_bundle_is_named_with_the_variable_that_chose_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A mistyped SSL_CERT_FILE fails the first TLS connection with one line that names
    the variable and the file, not a bare "No such file or directory"."""
    missing = tmp_path / "nonexistent.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    with pytest.raises(CABundleError, match=r"^SSL_CERT_FILE \(.*nonexistent\.pem\) cannot"):
        client_context().load_now()
    garbled = tmp_path / "garbled.pem"
    garbled.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(garbled))
    with pytest.raises(CABundleError, match=r"garbled\.pem\) cannot be loaded for TLS"):
        client_context().load_now()


def test_a_connection_over_tls_reports_the_unreadable_bundle(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Through httpx, as every client of ours uses the context: the error that reaches
    the run's one-line message is the named one (any listening port will do: the
    bundle is loaded when the connection is wrapped, before any handshake)."""
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "nonexistent.pem"))
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with httpx.Client(verify=client_context()) as client:
            with pytest.raises(httpx.ConnectError) as caught:
                client.get(f"https://127.0.0.1:{port}/")
    assert unreadable_ca_bundle(caught.value) == str(caught.value)
    assert str(caught.value).startswith("SSL_CERT_FILE (")


async def test_the_chat_wire_names_the_bundle_at_once_without_retrying(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A CA bundle that cannot be loaded is configuration: the LLM's wire says so in
    its error and does not spend its retries (and their back-off) on it."""
    from deepsearch.llm.openai_wire import ChatWire, WireConnectionError

    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "nonexistent.pem"))
    pauses: list[float] = []

    async def record(seconds: float) -> None:
        pauses.append(seconds)

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        wire = ChatWire(
            base_url=f"https://127.0.0.1:{port}/v1",
            api_key="sk-test",
            read_timeout_s=5,
            connect_timeout_s=5,
            max_retries=2,
        )
        wire.sleep = record
        with pytest.raises(WireConnectionError, match=r"^SSL_CERT_FILE \(.*nonexistent"):
            await wire.open({"model": "m", "messages": []})
        await wire.aclose()
    assert pauses == [], "a configuration error was retried"
