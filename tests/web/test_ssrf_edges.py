"""The SSRF guard's edges (web/ssrf.py), with a scripted resolver: a `.localhost` name
is refused by name whatever it resolves to, loose IPv4 forms stop at their range
(`8.16777216` is no address, not 9.0.0.0), an empty or unparsable peer is refused,
one private record refuses the host, and the scheme/host/port checks."""

from __future__ import annotations

import ipaddress
import re

import pytest

from deepsearch.web.ssrf import (
    BlockedURL,
    HostResolutionError,
    SSRFGuard,
    is_public_address,
    parse_ip_literal,
    parse_ipv4_loose,
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
    ],
)
def test_public_addresses(address: str, public: bool) -> None:
    ip = parse_ip_literal(address)
    assert ip is not None and is_public_address(ip) is public
