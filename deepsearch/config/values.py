"""Field types that check what a user may get wrong: an endpoint URL, a host list,
an answer-key site. A typo fails at load, with the key named, not mid-run."""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator

from deepsearch.config.redaction import redact_userinfo


def _http_url(value: str) -> str:
    """A provider endpoint must be http(s)://host…: a typo fails at load, not mid-run."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {redact_userinfo(value)!r}")
    return value.strip()


HttpUrl = Annotated[str, AfterValidator(_http_url)]
_HOST = re.compile(r"(?:[\w-]+\.)+[\w-]+\.?|localhost", re.IGNORECASE)


def _host_names(values: list[str]) -> list[str]:
    """Host lists (`--only-hostnames` …): a typo would silently filter out every result,
    so each entry must be a host name; a pasted URL is reduced to its host."""
    hosts = []
    for value in values:
        host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value.strip(), flags=re.IGNORECASE)
        host = host.split("/", 1)[0]
        if not _HOST.fullmatch(host):
            raise ValueError(f"not a host name (like en.wikipedia.org): {value!r}")
        hosts.append(host.lower())
    return hosts


HostList = Annotated[list[str], AfterValidator(_host_names)]


_ANSWER_KEY_SITE = re.compile(r"(?:[\w-]+\.)+[\w-]+(?:/[\w.~%-]+)*", re.IGNORECASE)


def answer_key_sites(values: list[str]) -> list[str]:
    """`host` or `host/path` (a repository on a code host), without a scheme."""
    sites = []
    for value in values:
        site = re.sub(r"^https?://", "", value.strip(), flags=re.IGNORECASE).rstrip("/")
        if not _ANSWER_KEY_SITE.fullmatch(site):
            raise ValueError(
                f"not a host or host/path (like github.com/openai/simple-evals): {value!r}"
            )
        host, _, path = site.partition("/")
        sites.append(host.lower() + (f"/{path}" if path else ""))
    return sites


AnswerKeySites = Annotated[list[str], AfterValidator(answer_key_sites)]
