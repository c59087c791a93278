"""How long one LLM call may take: a first-token allowance and a whole-call limit.

A hosted API starts answering within seconds; a local server on a CPU first reads
the whole prompt (minutes for a long one) and then writes a few tokens a second.
So a call gets two limits, each `llm.*` key's default depending on where it goes:

| limit | key | hosted API | local server |
|---|---|---|---|
| first token: from sending to the first streamed chunk | `llm.first_token_timeout_s` | 120 s | 600 s |
| whole call: from sending to the last token | `llm.timeout_s` | 300 s | 900 s |

A local server is the `ollama` provider, or a base URL whose host is `localhost`,
a loopback or private address, or a `.local` / `.lan` / `.internal` name (a machine
on the user's own network). Reaching either limit abandons the call at once (a
streamed reply is closed, which makes llama.cpp, vLLM and Ollama stop generating)
and is never retried: a call that ran out of time would only run out again.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from deepsearch.config import LLMConfig

CONNECT_TIMEOUT_S = 10.0
# The SDK's own read timeout sits above the call limit, so that it never fires (and
# is never retried by the SDK): the call limit ends the call first.
SDK_TIMEOUT_MARGIN_S = 30.0
_LOCAL_SUFFIXES = (".local", ".lan", ".internal", ".localhost", ".home.arpa")


@dataclass(frozen=True)
class CallLimits:
    first_token_s: float
    total_s: float

    @property
    def sdk_read_timeout_s(self) -> float:
        """The HTTP read timeout of the wire client and of the SDK: above the whole-call
        limit, so the call's own limits (asyncio) are what end a slow call."""
        return self.total_s + SDK_TIMEOUT_MARGIN_S


HOSTED = CallLimits(first_token_s=120.0, total_s=300.0)
LOCAL = CallLimits(first_token_s=600.0, total_s=900.0)


def is_local_endpoint(provider: str, base_url: str | None) -> bool:
    """The call goes to a server on this machine or the user's own network."""
    if provider == "ollama":
        return True
    if not base_url:
        return False
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(_LOCAL_SUFFIXES):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def call_limits(llm: LLMConfig, provider: str, base_url: str | None) -> CallLimits:
    """The limits of every call to this endpoint: configured, else by locality. The
    first-token allowance never exceeds the whole-call limit."""
    default = LOCAL if is_local_endpoint(provider, base_url) else HOSTED
    total = llm.timeout_s if llm.timeout_s is not None else default.total_s
    first = llm.first_token_timeout_s
    first = first if first is not None else default.first_token_s
    return CallLimits(first_token_s=min(first, total), total_s=total)


def capped(limits: CallLimits, seconds: float) -> CallLimits:
    """Both limits cut to `seconds` (a quick check such as `doctor`)."""
    return CallLimits(min(limits.first_token_s, seconds), min(limits.total_s, seconds))
