"""URL tools: one canonical spelling per page, a page's identity, hostname helpers.

The one owner of URL identity: the agent's ranking, citations and visits group and
filter by `hostname` / `host_matches_any` from here, never by a copy of their own.

`normalize_url` is the canonical form the agent uses to deduplicate, rank and remember
URLs; `url_key` is the same identity without the scheme, for matching a URL written
in an answer against the pages the run saw. Its rules follow the reference (lowercase host, strip `www.`, drop default
ports, trailing slash, fragment, tracking and session parameters, sort the query,
refuse non-http(s) and search-engine result pages) with these deliberate changes:

* Percent-encoding is normalized the RFC 3986 §6.2.2 way: an escape is decoded only
  when it stands for an unreserved character (`A-Z a-z 0-9 - . _ ~`); every other
  escape is kept with upper-case hex, and characters that must be escaped (spaces,
  non-ASCII, `"<>` ...) are escaped as UTF-8. So `%2F` never becomes a path separator,
  `%26` never splits a query, invalid UTF-8 survives byte for byte, and the result is
  plain ASCII. The reference decodes to Unicode, which changes meaning in these cases.
* The query key `s` is kept. The reference drops it as a "session" key, which
  breaks every site where it is meaningful (WordPress `?s=term`, many `?s=<id>`
  pages); a duplicate read costs less than reading the wrong page.
* Only the reserved documentation hosts example.com/.org/.net (and their subdomains)
  are refused, not every URL that merely contains "example.com".
* Internationalized host names are written in their ASCII (punycode) form, so the
  whole result is ASCII and one host has one spelling.
* User info (`user:pass@`) is dropped: a canonical URL must never carry a secret
  into prompts, logs or traces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import SplitResult, unquote_plus, urlsplit

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters allowed literally in a path segment / query component (besides unreserved).
_PATH_LITERAL = _UNRESERVED | frozenset("!$&'()*+,;=:@")
_QUERY_LITERAL = _UNRESERVED | frozenset("!$'()*+,;:@/?")  # '&' and '=' are structural
_VALUE_LITERAL = _QUERY_LITERAL | {"="}  # after the first '=', a literal '=' is data
_HEX = frozenset("0123456789abcdefABCDEF")

_TRACKING_KEYS = frozenset(
    {
        "ref",
        "referrer",
        "fbclid",
        "gclid",
        "cid",
        "mcid",
        "source",
        "medium",
        "campaign",
        "term",
        "content",
        "sc_rid",
    }
)
# `s` is deliberately absent (see the module docstring).
_SESSION_KEYS = frozenset(
    {"session", "sid", "sessionid", "phpsessid", "jsessionid", "aspsessionid", "asp.net_sessionid"}
)
_RESERVED_EXAMPLE_HOSTS = ("example.com", "example.org", "example.net")
_RESERVED_SUBDOMAINS = tuple("." + host for host in _RESERVED_EXAMPLE_HOSTS)
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Whitespace (str.isspace's, which \s is) or a character that cannot be in a host name.
_NOT_IN_HOST = re.compile(r"[\s/\\@#?%]")


def _canonical_escape(text: str, literal: frozenset[str]) -> str:
    """Re-escape `text` so equal byte sequences always get the same spelling."""
    if "%" not in text and literal.issuperset(text):
        return text  # nothing to re-escape: most path segments (a run's links, issue 21)
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and i + 2 < len(text) and text[i + 1] in _HEX and text[i + 2] in _HEX:
            byte = int(text[i + 1 : i + 3], 16)
            decoded = chr(byte)
            out.append(decoded if decoded in _UNRESERVED else f"%{byte:02X}")
            i += 3
            continue
        if ch in literal:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        i += 1
    return "".join(out)


def _remove_dot_segments(segments: list[str]) -> list[str]:
    stack: list[str] = []
    for seg in segments:
        if seg == ".":
            continue
        if seg == "..":
            if stack:
                stack.pop()
            continue
        stack.append(seg)
    return stack


def _normalize_path(path: str) -> str:
    segments = [s for s in path.split("/") if s]  # also collapses '//'
    segments = [_canonical_escape(s, _PATH_LITERAL) for s in segments]
    # `%2E` decodes to '.', so dot segments are resolved after escaping is canonical.
    segments = _remove_dot_segments(segments)
    return "/" + "/".join(segments) if segments else "/"


def _query_key_name(raw_key: str) -> str:
    return unquote_plus(raw_key).strip().lower()


def _keep_query_key(name: str) -> bool:
    if not name:
        return False
    if name.startswith(("utm_", "mc_")):
        return False
    return name not in _TRACKING_KEYS and name not in _SESSION_KEYS


def _normalize_query(query: str) -> str:
    pairs: list[tuple[str, str]] = []
    for part in query.split("&"):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not _keep_query_key(_query_key_name(key)):
            continue
        key = _canonical_escape(key, _QUERY_LITERAL)
        value = _canonical_escape(value, _VALUE_LITERAL)
        pairs.append((key, f"{key}{sep}{value}"))
    pairs.sort(key=lambda kv: kv[0])  # stable: repeated keys keep their order
    return "&".join(item for _, item in pairs)


def _normalize_host(host: str) -> str | None:
    host = host.strip().rstrip(".").lower()
    if not host:
        return None
    while host.startswith("www.") and "." in host[4:]:  # a loop keeps it idempotent
        host = host[4:]
    if _NOT_IN_HOST.search(host):
        return None
    if not host.isascii():
        # One spelling per host: internationalized names in their ASCII (punycode) form.
        try:
            host = host.encode("idna").decode("ascii").lower()
        except UnicodeError:
            return None
    return host


def _is_search_results_page(host: str, path: str, query: str) -> bool:
    q_keys = {_query_key_name(p.partition("=")[0]) for p in query.split("&") if p}
    if host.startswith("google.") and (path.startswith(("/search", "/url")) or "q" in q_keys):
        return True
    if host.endswith("bing.com") and path.startswith("/search"):
        return True
    if host.endswith("duckduckgo.com") and ("q" in q_keys or path.startswith("/html")):
        return True
    if host.endswith("baidu.com") and (path == "/s" or path.startswith("/s/")):
        return True
    if host.endswith("search.yahoo.com") or (
        host.startswith("yandex.") and path.startswith("/search")
    ):
        return True
    return host == "search.brave.com" and path.startswith("/search")


def _is_reserved_example(host: str) -> bool:
    return host in _RESERVED_EXAMPLE_HOSTS or host.endswith(_RESERVED_SUBDOMAINS)


def _split(url: str) -> SplitResult | None:
    # WHATWG parsers drop tab/newline anywhere and trim the ends; do the same, and
    # escape any interior space instead of silently deleting it.
    cleaned = re.sub(r"[\t\r\n]", "", url).strip()
    if not cleaned:
        return None
    try:
        parts = urlsplit(cleaned)
        _ = parts.port  # raises ValueError on a bad port
    except ValueError:
        return None
    return parts


def _normalize_file_url(parts: SplitResult) -> str | None:
    if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        return None
    return "file://" + _normalize_path(parts.path)


def _canonical(parts: SplitResult) -> tuple[str, str, str, str] | None:
    """(host, netloc, path, query) of an http(s) URL in canonical spelling; None
    without a usable host."""
    host = _normalize_host(parts.hostname or "")
    if host is None:
        return None
    netloc = f"[{host}]" if ":" in host else host
    port = parts.port
    if port is not None and port != _DEFAULT_PORTS[parts.scheme.lower()]:
        netloc = f"{netloc}:{port}"
    path = _normalize_path(parts.path)
    if host in ("x.com", "twitter.com") and path.endswith("/analytics") and "/status/" in path:
        path = path[: -len("/analytics")]
    return host, netloc, path, _normalize_query(parts.query)


def normalize_url(url: str, *, allow_file: bool = False) -> str | None:
    """The canonical form of `url`, or None when it is unusable for research.

    `allow_file=True` also accepts `file:///abs/path` URLs (the local corpus).
    Idempotent: normalize_url(normalize_url(u)) == normalize_url(u).
    """
    return _normalized(url, allow_file) if isinstance(url, str) else None


@lru_cache(maxsize=65_536)
def _normalized(url: str, allow_file: bool) -> str | None:
    """normalize_url's work, cached: a page's links and the URL pool are normalized
    again at every step and every reference check (~20 us a URL, issue 21)."""
    parts = _split(url)
    if parts is None:
        return None
    scheme = parts.scheme.lower()
    if scheme == "file" and allow_file:
        return _normalize_file_url(parts)
    if scheme not in _DEFAULT_PORTS:
        return None
    canonical = _canonical(parts)
    if canonical is None:
        return None
    host, netloc, path, query = canonical
    if _is_reserved_example(host) or _is_search_results_page(host, path, query):
        return None
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


@lru_cache(maxsize=65_536)  # pure, and asked again for every URL a run saw (as above)
def url_key(url: str) -> str:
    """A page's identity for "is this a page the run saw?": the canonical spelling of
    `normalize_url` without its scheme (http and https serve one page) and without a
    trailing slash.

    Unlike `normalize_url` it refuses nothing: a search page or a reserved example
    host still has an identity; a URL without a usable http(s) host is its own key.
    """
    parts = _split(url)
    if parts is None or parts.scheme.lower() not in _DEFAULT_PORTS:
        return url.strip()
    canonical = _canonical(parts)
    if canonical is None:
        return url.strip()
    _, netloc, path, query = canonical
    return f"{netloc}{path.rstrip('/')}" + (f"?{query}" if query else "")


def normalize_hostname(host_or_url: str) -> str | None:
    """Lowercase hostname without a leading `www.`; accepts a bare host or a URL."""
    if not host_or_url or not host_or_url.strip():
        return None
    text = host_or_url.strip()
    if "://" not in text:
        text = "http://" + text
    parts = _split(text)
    if parts is None or not parts.hostname:
        return None
    return _normalize_host(parts.hostname)


@lru_cache(maxsize=65_536)
def hostname(url: str) -> str:
    """`normalize_hostname` for grouping and filtering pages by host: '' for URLs
    without one, such as the local corpus's file:// URLs. Cached: the agent ranks its
    whole URL pool again every step."""
    return normalize_hostname(url) or ""


def hostname_of(url: str) -> str | None:
    """The normalized hostname of an http(s) URL, or None."""
    parts = _split(url)
    if parts is None or parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return _normalize_host(parts.hostname)


def host_matches(host: str, site: str) -> bool:
    """True when `host` is `site` or one of its subdomains (for `site:` filtering)."""
    h, s = normalize_hostname(host), normalize_hostname(site)
    return h is not None and s is not None and (h == s or h.endswith("." + s))


def host_matches_any(host: str, patterns: Iterable[str]) -> bool:
    """True when `host` is one of `patterns` (hosts or URLs) or a subdomain of one;
    blank patterns match nothing (the hostname options of a run)."""
    return bool(host) and any(host_matches(host, p) for p in patterns if p.strip())


def is_local_url(url: str) -> bool:
    """A document of the local corpus (`--corpus DIR`): a file: URL, in any case."""
    return url.lower().startswith("file:")
