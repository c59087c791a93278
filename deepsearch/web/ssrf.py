"""SSRF guard: the reader must not be turned against the machine it runs on.

A URL is allowed only when its scheme is http(s) and *every* address its host
resolves to is public. The check runs before each redirect hop and, through
`GuardedNetworkBackend`, at the moment of connecting: the connection is made to
the very address that was validated (no second DNS lookup an attacker could
rebind), while the Host header and TLS SNI keep the original hostname.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import httpcore

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) -> the IP addresses (as strings) a connection could go to.
Resolver = Callable[[str, int], Awaitable[list[str]]]
AddressPredicate = Callable[[IPAddress], bool]

ALLOWED_SCHEMES = frozenset({"http", "https"})

# Ranges Python's `is_global` misses on some 3.11 patch levels, or that are
# special-purpose (IANA registries) and never a legitimate web server.
_EXTRA_BLOCKED: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = tuple(
    ipaddress.ip_network(net)
    for net in (
        "0.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT
        "192.0.0.0/24",
        "192.0.2.0/24",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "240.0.0.0/4",
        "255.255.255.255/32",
        "64:ff9b:1::/48",  # local-use NAT64
        "100::/64",  # discard-only
        "2001::/23",  # IETF protocol assignments (Teredo, ORCHID, ...)
        "2001:db8::/32",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPAT = ipaddress.ip_network("::/96")


class BlockedURL(Exception):
    """The URL (or an address it resolves to) is not allowed; message says why."""


class HostResolutionError(Exception):
    """The host name did not resolve."""


# ---------------------------------------------------------------- addresses


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries (mapped, 6to4, NAT64, compatible)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public_address(ip: IPAddress) -> bool:
    """True only for globally routable unicast addresses (embedded IPv4 checked too)."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id or ip in _IPV4_COMPAT:
            return False  # zoned, or the deprecated IPv4-compatible form (::a.b.c.d)
        inner = _embedded_ipv4(ip)
        if inner is not None:
            return is_public_address(inner)
    if (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    ):
        return False
    return not any(ip.version == net.version and ip in net for net in _EXTRA_BLOCKED)


def _parse_ipv4_part(part: str) -> int | None:
    if not part:
        return None
    lower = part.lower()
    try:
        if lower.startswith("0x"):
            return int(lower[2:] or "0", 16)
        if len(part) > 1 and part.startswith("0"):
            return int(part, 8)
        if part.isdigit():
            return int(part, 10)
    except ValueError:
        return None
    return None


def parse_ipv4_loose(host: str) -> ipaddress.IPv4Address | None:
    """IPv4 in every inet_aton/WHATWG spelling: 127.1, 2130706433, 0x7f.1, 0177.0.0.1."""
    parts = host.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts = parts[:-1]  # one trailing dot is allowed
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_parse_ipv4_part(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    values: list[int] = [n for n in numbers if n is not None]
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    value = last
    for index, byte in enumerate(head):
        value |= byte << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a host string spells literally, or None for a name."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)  # keeps a %zone as scope_id
        except ValueError:
            return None
    return parse_ipv4_loose(host)


# ---------------------------------------------------------------- resolution


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve with the event loop's getaddrinfo (runs in the default executor)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise HostResolutionError(f"cannot resolve {host!r}") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class SSRFGuard:
    """Decides whether a URL / host / peer address may be contacted."""

    def __init__(
        self,
        *,
        allow_private: bool = False,
        resolver: Resolver | None = None,
        is_allowed: AddressPredicate | None = None,
    ) -> None:
        self.allow_private = allow_private
        self._resolver = resolver or system_resolver
        self._is_allowed = is_allowed or is_public_address

    def address_allowed(self, ip: IPAddress) -> bool:
        return self.allow_private or self._is_allowed(ip)

    def check_scheme(self, url: str) -> tuple[str, int]:
        """(host, port) of an http(s) URL; BlockedURL otherwise."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise BlockedURL(f"malformed URL: {exc}") from None
        scheme = parts.scheme.lower()
        if scheme not in ALLOWED_SCHEMES:
            raise BlockedURL(f"scheme {scheme or '(none)'!r} is not allowed")
        if not parts.hostname:
            raise BlockedURL("URL has no host")
        return parts.hostname, port or (443 if scheme == "https" else 80)

    async def resolve_checked(self, host: str, port: int) -> list[str]:
        """Addresses for host, all of them allowed; BlockedURL if any is not."""
        literal = parse_ip_literal(host)
        if literal is not None:
            addresses = [str(literal)]
        else:
            name = host.rstrip(".").lower()
            if not self.allow_private and (name == "localhost" or name.endswith(".localhost")):
                raise BlockedURL(f"host {host!r} is local")
            addresses = await self._resolver(host, port)
            if not addresses:
                raise HostResolutionError(f"cannot resolve {host!r}")
        self.check_addresses(host, addresses)
        return addresses

    def check_addresses(self, host: str, addresses: Iterable[str]) -> None:
        for raw in addresses:
            ip = parse_ip_literal(raw)
            if ip is None or not self.address_allowed(ip):
                # Refuse the whole host: one private record is enough to rebind.
                raise BlockedURL(f"host {host!r} resolves to a non-public address ({raw})")

    async def check_url(self, url: str) -> list[str]:
        host, port = self.check_scheme(url)
        return await self.resolve_checked(host, port)

    def check_peer(self, peer: Any) -> None:
        """Verify the address a response actually came from (socket peername)."""
        if self.allow_private or peer is None:
            return
        host = peer[0] if isinstance(peer, tuple | list) and peer else peer
        ip = parse_ip_literal(str(host))
        if ip is None or not self._is_allowed(ip):
            raise BlockedURL(f"connected to a non-public address ({host})")


# ---------------------------------------------------------------- httpcore glue


def guarded_network_backend(guard: SSRFGuard) -> httpcore.AsyncNetworkBackend:
    """An httpcore backend that connects only to addresses the guard validated."""
    import httpcore

    class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.AnyIOBackend()

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,  # noqa: ASYNC109 (httpcore signature)
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> httpcore.AsyncNetworkStream:
            try:
                addresses = await asyncio.wait_for(guard.resolve_checked(host, port), timeout)
            except TimeoutError:
                raise httpcore.ConnectTimeout(f"resolving {host!r} timed out") from None
            last: Exception | None = None
            for address in addresses:
                try:
                    return await self._inner.connect_tcp(
                        address, port, timeout, local_address, socket_options
                    )
                except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                    last = exc
            assert last is not None
            raise last

        async def connect_unix_socket(
            self,
            path: str,
            timeout: float | None = None,  # noqa: ASYNC109 (httpcore signature)
            socket_options: Iterable[Any] | None = None,
        ) -> httpcore.AsyncNetworkStream:
            raise BlockedURL("unix sockets are not allowed")

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    return GuardedNetworkBackend()


def guarded_transport(guard: SSRFGuard, *, max_connections: int = 100) -> Any:
    """An httpx transport whose every connection goes through the guard.

    httpx 0.28 has no public hook for a network backend, so the connection pool
    is swapped for one built with ours, with the process's TLS context (web/tls.py).
    """
    import httpcore
    import httpx

    from deepsearch.web.tls import client_context

    ssl_context = client_context()
    # Handed to the transport so it builds no context of its own: that one would load
    # certifi's whole CA bundle (~30 ms a reader) only to be dropped with its pool.
    transport = httpx.AsyncHTTPTransport(verify=ssl_context, trust_env=False)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=ssl_context,
        max_connections=max_connections,
        max_keepalive_connections=20,
        keepalive_expiry=5.0,
        network_backend=guarded_network_backend(guard),
    )
    return transport
