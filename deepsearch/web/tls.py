"""One TLS client context per process, its CA bundle loaded at the first TLS handshake.

httpx builds an SSL context for every client it makes, and loading certifi's CA
bundle into one costs ~40 ms of CPU (issue 21): for each of a run's clients (the
LLM's, the search providers', the reader's), and even for clients that only ever
speak plain http (a local model, a SearXNG on loopback). Every client of ours is
given the one context below instead (`verify=client_context()`): made as httpx makes
its own (`httpx.create_ssl_context`: `ssl.create_default_context` with
$SSL_CERT_FILE, $SSL_CERT_DIR or certifi's bundle), except that the CA certificates
are loaded when the context first wraps a connection. A plain-http run never loads
them; an https one loads them once.
"""

from __future__ import annotations

import os
import ssl
import sys
import threading
from typing import Any


class CABundleError(OSError):
    """The CA certificates a TLS connection needs cannot be loaded: named with the
    variable that chose them, so the one-line error says what to fix."""


def _source(cafile: str | None, capath: str | None) -> str:
    if cafile is not None and cafile == os.environ.get("SSL_CERT_FILE"):
        return f"SSL_CERT_FILE ({cafile})"
    if capath is not None and capath == os.environ.get("SSL_CERT_DIR"):
        return f"SSL_CERT_DIR ({capath})"
    return f"the CA bundle {cafile or capath}"


def _ca_locations(trust_env: bool) -> tuple[str | None, str | None]:
    """(cafile, capath) as httpx.create_ssl_context chooses them for verify=True."""
    if trust_env and os.environ.get("SSL_CERT_FILE"):
        return os.environ["SSL_CERT_FILE"], None
    if trust_env and os.environ.get("SSL_CERT_DIR"):
        return None, os.environ["SSL_CERT_DIR"]
    import certifi

    return certifi.where(), None


class DeferredCAContext(ssl.SSLContext):
    """`ssl.create_default_context(cafile=..., capath=...)`'s client context, whose
    verify locations are loaded on its first wrap_socket / wrap_bio (thread-safe)."""

    def __new__(cls, cafile: str | None = None, capath: str | None = None) -> DeferredCAContext:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self, cafile: str | None = None, capath: str | None = None) -> None:
        # What create_default_context(Purpose.SERVER_AUTH) sets, the CA loading aside.
        self.verify_mode = ssl.CERT_REQUIRED
        self.check_hostname = True
        if sys.version_info >= (3, 13):  # create_default_context's stricter chain rules
            self.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
        keylog = os.environ.get("SSLKEYLOGFILE")
        if keylog and not sys.flags.ignore_environment:
            self.keylog_filename = keylog
        self._locations = (cafile, capath)
        self._lock = threading.Lock()
        self.loaded = False

    def load_now(self) -> None:
        """Load the CA certificates, once."""
        with self._lock:
            if not self.loaded:
                try:
                    self.load_verify_locations(*self._locations)
                except (OSError, ssl.SSLError) as exc:  # a missing or malformed bundle
                    reason = getattr(exc, "strerror", None) or str(exc)
                    where = _source(*self._locations)
                    raise CABundleError(f"{where} cannot be loaded for TLS: {reason}") from exc
                self.loaded = True

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.load_now()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.load_now()
        return super().wrap_bio(*args, **kwargs)


_CONTEXTS: dict[tuple[str | None, str | None], DeferredCAContext] = {}
_MAKING = threading.Lock()


def client_context(*, trust_env: bool = True) -> DeferredCAContext:
    """The process's context for `trust_env` (whether $SSL_CERT_FILE / $SSL_CERT_DIR
    count, as for an httpx client made with that trust_env); made on first call."""
    locations = _ca_locations(trust_env)
    with _MAKING:
        context = _CONTEXTS.get(locations)
        if context is None:
            context = _CONTEXTS[locations] = DeferredCAContext(*locations)
        return context
