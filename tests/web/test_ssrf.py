"""SSRF guard ON: private targets are refused and the loopback server never sees a request."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepsearch.config import ReaderConfig
from deepsearch.web.reader import LocalReader
from deepsearch.web.ssrf import (
    BlockedURL,
    SSRFGuard,
    is_public_address,
    parse_ip_literal,
    system_resolver,
)
from deepsearch.web.types import Page, ReadFailure
from tests.fakes.web_server import LoopbackServer, site_routes


def fixed_resolver(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> list[str]:
        return table[host]

    return resolve


@pytest.fixture
def secret() -> Iterator[LoopbackServer]:
    with LoopbackServer("127.0.0.1", site_routes()) as server:
        yield server


def guarded_reader(**kwargs: object) -> LocalReader:
    return LocalReader(ReaderConfig(allow_private_urls=False), **kwargs)  # type: ignore[arg-type]


def assert_blocked(result: Page | ReadFailure) -> None:
    assert isinstance(result, ReadFailure), result
    assert result.kind == "blocked", result


@pytest.mark.parametrize(
    "template",
    [
        "http://127.0.0.1:{port}/secret",
        "http://127.1:{port}/secret",
        "http://2130706433:{port}/secret",
        "http://0x7f000001:{port}/secret",
        "http://0177.0.0.1:{port}/secret",
        "http://[::1]:{port}/secret",
        "http://[::ffff:127.0.0.1]:{port}/secret",
        "http://[0:0:0:0:0:ffff:7f00:1]:{port}/secret",
        "http://localhost:{port}/secret",
        "http://LOCALHOST.:{port}/secret",
        "http://evil.test:{port}/secret",
        "http://rebind.test:{port}/secret",
        "http://10.0.0.1:{port}/secret",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00::1]/",
        "http://0.0.0.0:{port}/secret",
    ],
)
async def test_private_targets_refused(secret: LoopbackServer, template: str) -> None:
    resolver = fixed_resolver(
        {"evil.test": ["127.0.0.1"], "rebind.test": ["93.184.216.34", "127.0.0.1"]}
    )
    reader = guarded_reader(resolver=resolver)
    try:
        assert_blocked(await reader.read(template.format(port=secret.port)))
    finally:
        await reader.aclose()
    assert secret.requests == []


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "gopher://127.0.0.1:70/", "ftp://example.com/"]
)
async def test_other_schemes_refused(url: str) -> None:
    reader = guarded_reader()
    try:
        assert_blocked(await reader.read(url))
    finally:
        await reader.aclose()


async def test_real_localhost_resolves_to_loopback() -> None:
    addresses = await system_resolver("localhost", 80)
    assert addresses
    assert all(not is_public_address(ipaddress.ip_address(a.split("%")[0])) for a in addresses)


async def test_public_page_redirecting_to_loopback_is_refused(secret: LoopbackServer) -> None:
    """public.test is a loopback alias we declare public; its redirect target is not."""
    alias = ipaddress.ip_address("127.0.0.2")
    with LoopbackServer("127.0.0.2", site_routes()) as public:
        guard = SSRFGuard(
            resolver=fixed_resolver({"public.test": ["127.0.0.2"], "evil.test": ["127.0.0.1"]}),
            is_allowed=lambda ip: ip == alias or is_public_address(ip),
        )
        reader = LocalReader(ReaderConfig(), guard=guard)
        try:
            ok = await reader.read(f"http://public.test:{public.port}/plain.txt")
            assert isinstance(ok, Page), ok  # the allowed hop really is served, pinned to 127.0.0.2
            for target in (secret.url("/secret"), f"http://evil.test:{secret.port}/secret"):
                assert_blocked(
                    await reader.read(f"http://public.test:{public.port}/redirect-to?to={target}")
                )
        finally:
            await reader.aclose()
        assert [path for path, _ in public.requests] == [
            "/plain.txt",
            f"/redirect-to?to={secret.url('/secret')}",
            f"/redirect-to?to=http://evil.test:{secret.port}/secret",
        ]
        assert public.requests[0][1]["Host"] == f"public.test:{public.port}"
    assert secret.requests == []


async def test_dns_rebinding_between_check_and_connect(secret: LoopbackServer) -> None:
    """The first lookup says public, the next says loopback: the connection is refused."""
    alias = ipaddress.ip_address("127.0.0.2")
    answers = iter([["127.0.0.2"]] + [["127.0.0.1"]] * 5)

    async def rebinding(host: str, port: int) -> list[str]:
        return next(answers)

    guard = SSRFGuard(
        resolver=rebinding, is_allowed=lambda ip: ip == alias or is_public_address(ip)
    )
    reader = LocalReader(ReaderConfig(), guard=guard)
    try:
        assert_blocked(await reader.read(f"http://flip.test:{secret.port}/secret"))
    finally:
        await reader.aclose()
    assert secret.requests == []


async def test_allow_private_urls_opt_in(secret: LoopbackServer) -> None:
    reader = LocalReader(ReaderConfig(allow_private_urls=True))
    try:
        result = await reader.read(secret.url("/secret"))
    finally:
        await reader.aclose()
    assert isinstance(result, Page)
    assert len(secret.requests) == 1


@pytest.mark.parametrize(
    ("peer", "allowed"),
    [
        (("127.0.0.1", 80), False),
        (("::ffff:10.1.2.3", 443, 0, 0), False),
        (("169.254.169.254", 80), False),
        (("8.8.8.8", 443), True),
        (("2606:4700::1111", 443, 0, 0), True),
    ],
)
def test_peer_address_check(peer: tuple[object, ...], allowed: bool) -> None:
    guard = SSRFGuard()
    if allowed:
        guard.check_peer(peer)
    else:
        with pytest.raises(BlockedURL):
            guard.check_peer(peer)


# ---------------------------------------------------------------- property tests

BLOCKED_NETS = [
    ipaddress.ip_network(n)
    for n in (
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "0.0.0.0/8",
        "100.64.0.0/10",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::1/128",
        "::/128",
        "fc00::/7",
        "fe80::/10",
        "ff00::/8",
    )
]
GLOBAL_NETS = [
    ipaddress.ip_network(n)
    for n in (
        "8.8.0.0/16",
        "93.184.0.0/16",
        "151.101.0.0/16",
        "1.1.1.0/24",
        "2606:4700::/32",
        "2a00:1450::/32",
    )
]


def _address_in(nets: list[ipaddress.IPv4Network | ipaddress.IPv6Network]):  # type: ignore[no-untyped-def]
    return st.sampled_from(nets).flatmap(
        lambda net: st.integers(0, net.num_addresses - 1).map(lambda i: net[i])
    )


def ipv4_spellings(ip: ipaddress.IPv4Address) -> list[str]:
    """Every way inet_aton / a browser accepts to write the same IPv4 address."""
    a, b, c, d = ip.packed
    value = int(ip)
    return [
        str(ip),
        str(value),
        hex(value),
        f"0{value:o}",
        f"0{a:o}.0{b:o}.0{c:o}.0{d:o}",
        f"{hex(a)}.{hex(b)}.{hex(c)}.{hex(d)}",
        f"{a}.{b}.{(c << 8) | d}",
        f"{a}.{(b << 16) | (c << 8) | d}",
        f"{ip}.",
        f"[::ffff:{ip}]",
        f"::ffff:{(a << 8) | b:x}:{(c << 8) | d:x}",
        f"2002:{(a << 8) | b:x}:{(c << 8) | d:x}::1",
        f"64:ff9b::{ip}",
    ]


@settings(max_examples=50, deadline=None)
@given(ip=_address_in(BLOCKED_NETS), pick=st.integers(0, 12))
async def test_every_blocked_address_refused_in_any_spelling(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address, pick: int
) -> None:
    spellings = ipv4_spellings(ip) if ip.version == 4 else [str(ip), f"[{ip}]", ip.exploded]
    host = spellings[pick % len(spellings)]
    parsed = parse_ip_literal(host)
    assert parsed is not None, host
    assert not is_public_address(parsed), host

    async def must_not_resolve(name: str, port: int) -> list[str]:
        raise AssertionError("a literal address must not be resolved")

    guard = SSRFGuard(resolver=must_not_resolve)
    url_host = host if ":" not in host or host.startswith("[") else f"[{host}]"
    with pytest.raises(BlockedURL):
        await guard.check_url(f"http://{url_host}/")


@settings(max_examples=50, deadline=None)
@given(ip=_address_in(GLOBAL_NETS))
def test_global_addresses_allowed_by_the_predicate(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    assert is_public_address(ip)
    if ip.version == 4:
        for spelling in ipv4_spellings(ip):
            parsed = parse_ip_literal(spelling)
            assert parsed is not None and is_public_address(parsed), spelling


async def test_peer_check_catches_an_injected_client_that_connects_elsewhere(
    secret: LoopbackServer,
) -> None:
    """An injected client bypasses our pinned transport; the peer address still gets checked.

    The fake resolver says public, the client's own backend goes to loopback (a rebind
    between our check and its connect): the response is refused before its body is read.
    """
    import httpcore
    import httpx

    class ToLoopback(httpcore.AsyncNetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.AnyIOBackend()

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
            local_address: str | None = None,
            socket_options: object = None,
        ) -> httpcore.AsyncNetworkStream:
            return await self._inner.connect_tcp("127.0.0.1", port, timeout)

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    transport = httpx.AsyncHTTPTransport()
    transport._pool = httpcore.AsyncConnectionPool(network_backend=ToLoopback())
    client = httpx.AsyncClient(transport=transport)
    guard = SSRFGuard(resolver=fixed_resolver({"rebind.test": ["93.184.216.34"]}))
    reader = LocalReader(ReaderConfig(), guard=guard, http_client=client)
    try:
        result = await reader.read(f"http://rebind.test:{secret.port}/secret")
    finally:
        await reader.aclose()
        await client.aclose()
    assert_blocked(result)
    assert "internal secret" not in result.model_dump_json()
    assert len(secret.requests) == 1  # it did connect: only the pinned transport prevents that


def test_a_guarded_transport_builds_no_tls_context_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each reader builds a guarded transport: it takes the process's TLS context
    (web/tls.py) and loads no CA bundle; httpx's own pool, the one the guard replaces,
    would have loaded certifi's whole bundle for nothing."""
    import ssl
    from typing import Any

    from deepsearch.web.ssrf import guarded_transport
    from deepsearch.web.tls import client_context

    built: list[object] = []
    real = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(kwargs.get("cafile"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counted)
    transport = guarded_transport(SSRFGuard())
    assert built == []
    assert transport._pool._ssl_context is client_context()
