"""The process's TLS client context (web/tls.py): httpx's own, its CA bundle loaded at
the first wrap, one per CA choice."""

from __future__ import annotations

import ssl

import httpx
import pytest

from deepsearch.web import tls
from deepsearch.web.tls import DeferredCAContext, client_context

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
