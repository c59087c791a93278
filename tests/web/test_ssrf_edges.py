"""The SSRF guard's edges (web/ssrf.py), with a scripted resolver: a `.localhost` name
is refused by name whatever it resolves to, loose IPv4 forms stop at their range
(`8.16777216` is no address, not 9.0.0.0), an empty or unparsable peer is refused,
one private record refuses the host, and the scheme/host/port checks."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket

import pytest

from deepsearch.web.ssrf import (
    BlockedURL,
    HostResolutionError,
    SSRFGuard,
    is_public_address,
    parse_ip_literal,
    parse_ipv4_loose,
    system_resolver,
)

PUBLIC = "93.184.216.34"


def _resolver(*addresses: str):  # type: ignore[no-untyped-def]
    asked: list[tuple[str, int]] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return list(addresses)

    resolve.asked = asked  # type: ignore[attr-defined]
    return resolve


@pytest.mark.parametrize("host", ["localhost", "api.localhost", "API.LocalHost.", "a.b.localhost"])
async def test_a_localhost_name_is_refused_by_name(host: str) -> None:
    resolve = _resolver(PUBLIC)
    with pytest.raises(BlockedURL, match="is local"):
        await SSRFGuard(resolver=resolve).check_url(f"http://{host}/x")
    assert resolve.asked == []  # type: ignore[attr-defined]
    allowed = SSRFGuard(resolver=resolve, allow_private=True)
    assert await allowed.check_url(f"http://{host}/x") == [PUBLIC]


async def test_a_name_merely_containing_localhost_is_resolved() -> None:
    resolve = _resolver(PUBLIC)
    guard = SSRFGuard(resolver=resolve)
    assert await guard.check_url("https://localhost.example.com/") == [PUBLIC]
    assert await guard.check_url("http://notlocalhost:8080/") == [PUBLIC]
    assert resolve.asked == [("localhost.example.com", 443), ("notlocalhost", 8080)]  # type: ignore[attr-defined]


async def test_one_private_record_refuses_the_host_and_none_is_unresolvable() -> None:
    with pytest.raises(BlockedURL, match=r"non-public address \(10\.0\.0\.1\)"):
        await SSRFGuard(resolver=_resolver(PUBLIC, "10.0.0.1")).check_url("http://a.example/")
    with pytest.raises(BlockedURL, match="non-public"):
        await SSRFGuard(resolver=_resolver("not-an-ip")).check_url("http://a.example/")
    with pytest.raises(HostResolutionError, match="cannot resolve"):
        await SSRFGuard(resolver=_resolver()).check_url("http://a.example/")


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("8.16777215", "8.255.255.255"),
        ("8.16777216", None),  # past the 24-bit last part: not 9.0.0.0
        ("1.2.65535", "1.2.255.255"),
        ("1.2.65536", None),
        ("1.2.3.255", "1.2.3.255"),
        ("1.2.3.256", None),
        ("256.1.1.1", None),
        ("4294967295", "255.255.255.255"),
        ("4294967296", None),
        ("0x7f.1", "127.0.0.1"),
        ("0x.1", "0.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("08.1.1.1", None),  # not octal
        ("0", "0.0.0.0"),
        ("1.2.3.4.", "1.2.3.4"),
        ("1.2.3.4..", None),
        ("1..2", None),
        ("1.2.3.4.5", None),
        ("", None),
        ("0xg", None),
        ("12a", None),
    ],
)
def test_loose_ipv4_spellings_stop_at_their_range(host: str, address: str | None) -> None:
    parsed = parse_ipv4_loose(host)
    assert (str(parsed) if parsed is not None else None) == address


def test_ip_literals() -> None:
    assert parse_ip_literal(" [::1] ") == ipaddress.IPv6Address("::1")
    assert parse_ip_literal("fe80::1%eth0") is not None
    assert parse_ip_literal("[::zz]") is None
    assert parse_ip_literal("example.com") is None


@pytest.mark.parametrize("peer", ["", ("", 80), (), "garbage", ("::1", 80, 0, 0)])
def test_an_empty_or_unparsable_peer_is_refused(peer: object) -> None:
    with pytest.raises(BlockedURL, match="non-public"):
        SSRFGuard().check_peer(peer)


def test_no_peer_or_private_allowed_passes() -> None:
    SSRFGuard().check_peer(None)  # the transport could not tell: checked at connect
    SSRFGuard().check_peer((PUBLIC, 443))
    SSRFGuard().check_peer(PUBLIC)
    SSRFGuard(allow_private=True).check_peer(("127.0.0.1", 80))
    SSRFGuard(allow_private=True).check_peer("")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://a.example/", "scheme 'ftp' is not allowed"),
        ("//a.example/", "scheme '(none)' is not allowed"),
        ("http:///path", "URL has no host"),
        ("http://a.example:99999/", "malformed URL"),
    ],
)
def test_scheme_host_and_port(url: str, message: str) -> None:
    with pytest.raises(BlockedURL, match=re.escape(message)):
        SSRFGuard().check_scheme(url)


def test_default_ports() -> None:
    guard = SSRFGuard()
    assert guard.check_scheme("HTTPS://a.example/") == ("a.example", 443)
    assert guard.check_scheme("http://a.example/") == ("a.example", 80)
    assert guard.check_scheme("http://a.example:8080/") == ("a.example", 8080)


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("100.64.0.1", False),
        ("192.0.2.1", False),
        ("198.18.0.1", False),
        ("203.0.113.9", False),
        ("::ffff:8.8.8.8", True),
        ("::ffff:10.0.0.1", False),
        ("2002:0808:0808::1", True),
        ("2002:0a00:0001::1", False),
        ("64:ff9b::808:808", True),
        ("64:ff9b::a00:1", False),
        ("::8.8.8.8", False),  # the deprecated IPv4-compatible form
        ("fe80::1%eth0", False),
        ("2001:db8::1", False),
        ("2606:4700::1111", True),
        # Python's is_global lets these through: only _EXTRA_BLOCKED refuses them.
        ("192.0.0.128", False),
        ("fec0::1", False),
    ],
)
def test_public_addresses(address: str, public: bool) -> None:
    ip = parse_ip_literal(address)
    assert ip is not None and is_public_address(ip) is public


@pytest.mark.parametrize(
    ("host", "address"),
    [("1.", "0.0.0.1"), ("1.2.3.4.0", None), ("[::1", None), ("::1]", None)],
)
def test_edges_of_the_literal_forms(host: str, address: str | None) -> None:
    parsed = parse_ip_literal(host)
    assert (str(parsed) if parsed is not None else None) == address


def test_a_zoned_address_is_never_public() -> None:
    assert not is_public_address(ipaddress.IPv6Address("2606:4700::1111%eth0"))


async def test_the_system_resolver_resolves_the_host_it_is_given() -> None:
    assert await system_resolver("192.0.2.7", 80) == ["192.0.2.7"]  # numeric: no DNS
    with pytest.raises(HostResolutionError) as caught:
        await system_resolver("a" * 64 + ".example", 80)  # an invalid label: no DNS either
    assert str(caught.value) == f"cannot resolve '{'a' * 64}.example'"


async def test_messages_name_the_host() -> None:
    guard = SSRFGuard(resolver=_resolver("10.0.0.1"))
    with pytest.raises(BlockedURL) as caught:
        await guard.check_url("http://a.example/")
    assert str(caught.value) == "host 'a.example' resolves to a non-public address (10.0.0.1)"
    with pytest.raises(BlockedURL) as local:
        await guard.check_url("http://api.localhost/")
    assert str(local.value) == "host 'api.localhost' is local"
    with pytest.raises(BlockedURL) as peer:
        SSRFGuard().check_peer(("10.1.1.1", 80))
    assert str(peer.value) == "connected to a non-public address (10.1.1.1)"
    with pytest.raises(BlockedURL) as hostless:
        SSRFGuard().check_scheme("http:///x")
    assert str(hostless.value) == "URL has no host"


def _listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server


async def test_the_backend_connects_to_the_checked_address_with_the_callers_options() -> None:
    from deepsearch.web.ssrf import guarded_network_backend

    server = _listener()
    port = server.getsockname()[1]
    resolve = _resolver("127.0.0.1")
    backend = guarded_network_backend(SSRFGuard(resolver=resolve, allow_private=True))
    keepalive = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    try:
        stream = await backend.connect_tcp(
            "box.example", port, timeout=5.0, local_address="127.0.0.2",
            socket_options=keepalive,
        )  # fmt: skip
        sock = stream.get_extra_info("socket")
        assert sock.getpeername() == ("127.0.0.1", port)
        assert sock.getsockname()[0] == "127.0.0.2"  # the caller's source address
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        await stream.aclose()
    finally:
        server.close()
    assert resolve.asked == [("box.example", port)]  # type: ignore[attr-defined]
    await backend.sleep(0.0)


async def test_the_backend_refuses_and_fails_as_a_connection_does() -> None:
    import httpcore

    from deepsearch.web.ssrf import guarded_network_backend
    from tests.fakes.ports import refused_port

    refused = guarded_network_backend(
        SSRFGuard(resolver=_resolver("127.0.0.1"), allow_private=True)
    )
    with pytest.raises(httpcore.ConnectError):
        await refused.connect_tcp("box.example", refused_port(), timeout=5.0)
    with pytest.raises(BlockedURL) as unix:
        await refused.connect_unix_socket("/run/docker.sock")
    assert str(unix.value) == "unix sockets are not allowed"
    private = guarded_network_backend(SSRFGuard(resolver=_resolver("127.0.0.1")))
    with pytest.raises(BlockedURL, match="non-public"):
        await private.connect_tcp("box.example", refused_port(), timeout=5.0)

    async def never(host: str, port: int) -> list[str]:
        await asyncio.Event().wait()
        return []

    slow = guarded_network_backend(SSRFGuard(resolver=never))
    with pytest.raises(httpcore.ConnectTimeout) as caught:
        await slow.connect_tcp("box.example", 80, timeout=0.01)
    assert str(caught.value) == "resolving 'box.example' timed out"


def test_the_guarded_pool_keeps_its_limits() -> None:
    from deepsearch.web.ssrf import guarded_transport

    pool = guarded_transport(SSRFGuard(), max_connections=7)._pool
    assert pool._max_connections == 7
    assert pool._max_keepalive_connections == 7  # httpcore caps it at the connections
    assert pool._keepalive_expiry == 5.0
    default = guarded_transport(SSRFGuard())._pool
    assert default._max_connections == 100 and default._max_keepalive_connections == 20


async def test_the_callers_connect_timeout_reaches_the_connection() -> None:
    from deepsearch.web.ssrf import guarded_network_backend

    backend = guarded_network_backend(SSRFGuard(resolver=_resolver(PUBLIC)))
    seen: list[object] = []

    async def connect(address: str, port: int, timeout: float | None, *rest: object) -> str:  # noqa: ASYNC109
        seen.append((address, port, timeout))
        return "stream"

    backend._inner.connect_tcp = connect  # type: ignore[attr-defined]
    assert await backend.connect_tcp("box.example", 443, timeout=7.5) == "stream"
    assert seen == [(PUBLIC, 443, 7.5)]


async def test_a_name_is_compared_without_its_trailing_dot_only() -> None:
    guard = SSRFGuard(resolver=_resolver(PUBLIC))
    assert await guard.resolve_checked("LOCALHOSTX", 80) == [PUBLIC]
    with pytest.raises(BlockedURL):
        await guard.resolve_checked("LOCALHOST.", 80)
