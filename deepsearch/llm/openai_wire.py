"""A streamed chat completion spoken over httpx: the one request a run makes of an
OpenAI-compatible server, without the `openai` SDK.

Why not the SDK: importing it (its pydantic `openai.types`) costs about a second of
CPU, most of what a research run spends of its own (issue 21), for one POST. The SDK
stays for what is off a run's path (`ping`, embeddings; see `openai_provider`).

What the SDK did for this request, done here the same way:
* one `POST {base_url}/chat/completions` (JSON body, `Authorization: Bearer`, a JSON
  content type, a User-Agent; redirects followed);
* retries (`max_retries` more attempts) on a connection error or timeout before an
  answer, and on HTTP 408, 409, 429 and 5xx: the wait is the server's `retry-after-ms`
  / `Retry-After` (seconds or a date) when 0 < it <= 120 s, else 0.5 s doubling to
  8 s with up to 25% jitter; a Retry-After above 120 s is not waited for, and
  `x-should-retry: true/false` is obeyed;
* never a retry for a 5xx whose body names the structured-output request (a refused
  mode, `refusals.names_structured_output`), so a refused rung costs one request;
* an error status becomes `WireStatusError` (status, the body's `error` object, the
  message "Error code: N - <error.message>"); the SSE stream is read line by line
  (`data:` lines, comments and other fields ignored, `data: [DONE]` ends it, an
  `error` object in it raises `WireError`).
A stream ending with neither `[DONE]` nor a `finish_reason`, or broken mid-reply, is
cut off (`streaming.StreamCutOff`): never used, sent again like a request that got no
answer, both kinds of retry counted against `max_retries` (`Attempts`). An HTML page
for an answer, or a 429 `insufficient_quota`, is `WireUnusable`: no retry can help.
The call's limits are the caller's (`streaming.collect`), whose cancellation a retry
never outlives; closing the stream is what stops the server generating.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from deepsearch.clock import SystemClock
from deepsearch.llm.call_watch import retry_pause
from deepsearch.llm.refusals import names_structured_output
from deepsearch.llm.streaming import (
    Attempts,
    CallTimedOut,
    StallGuard,
    StreamCutOff,
    StreamedReply,
    collect,
)
from deepsearch.web.host_limits import retry_after_s as header_wait_s

if TYPE_CHECKING:
    import httpx

    from deepsearch.clock import Clock
    from deepsearch.llm.call_limits import CallLimits

INITIAL_RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 8.0
MAX_RETRY_AFTER_S = 120.0
_RETRIED_STATUSES = frozenset({408, 409, 429})
QUOTA_CODE = "insufficient_quota"  # OpenAI's 429 for an account without credit: no retry
# A 2xx of these types is a web page (a base URL without /v1, a proxy's login page).
_NOT_API_TYPES = ("text/html", "application/xhtml", "text/xml")
USER_AGENT = "deepsearch (OpenAI-compatible wire)"
Sleep = Callable[[float], Awaitable[None]]


class WireError(Exception):
    """A failed chat completion, shaped where `openai_provider` reads it like the
    SDK's `APIError`: `status_code` (None: no HTTP status), `body`, `message`, `code`."""

    def __init__(self, message: str, *, status_code: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.body = body
        code = body.get("code") if isinstance(body, dict) else None
        self.code = str(code) if code is not None else None


class WireStatusError(WireError):
    """The server answered an error status."""


class WireConnectionError(WireError):
    """No answer: the connection failed (after the retries)."""


class WireTimeout(WireConnectionError):
    """No answer within the transport's own timeouts (after the retries)."""


class WireUnusable(WireStatusError):
    """An endpoint no retry can help (an HTML page, no quota): the message says what to do."""


def transport_failure(exc: Exception) -> str | None:
    """ "timeout" / "unreachable" for a request that got no answer, else None. The SDK
    is consulted only when already imported: otherwise `exc` cannot be one of its."""
    if isinstance(exc, WireTimeout):
        return "timeout"
    if isinstance(exc, WireConnectionError):
        return "unreachable"
    sdk = sys.modules.get("openai")
    if sdk is not None and isinstance(exc, sdk.APITimeoutError):
        return "timeout"
    if sdk is not None and isinstance(exc, sdk.APIConnectionError):
        return "unreachable"
    return None


def status_error(status: int, text: str) -> WireStatusError:
    """The SDK's reading of an error body: JSON when it parses (its `error` object
    kept as `body`), else the text itself."""
    message = f"Error code: {status}"
    body: Any = text.strip()
    try:
        body = json.loads(body)
    except ValueError:
        return WireStatusError(message, status_code=status, body=body)
    inner = body.get("error", body) if isinstance(body, dict) else body
    detail = inner.get("message") if isinstance(inner, dict) else None
    if isinstance(detail, str) and detail:
        message += f" - {detail}"
    return WireStatusError(message, status_code=status, body=inner)


def retry_after_s(headers: httpx.Headers) -> float | None:
    """The server's requested wait in seconds (`retry-after-ms`, then `Retry-After` as
    a number or an HTTP date: the reader's own parser), or None."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            delay = float(millis)
        except ValueError:
            delay = None
        if delay is not None:
            return delay / 1000.0 if math.isfinite(delay) else MAX_RETRY_AFTER_S + 1
    return header_wait_s(headers.get("retry-after"), SystemClock())


def should_retry(status: int, headers: httpx.Headers, request_body: bytes, text: str) -> bool:
    """Whether the SDK would send an answered request again (see module doc)."""
    wait = retry_after_s(headers)
    if wait is not None and wait > MAX_RETRY_AFTER_S:
        return False
    refused = status >= 500 and b"response_format" in request_body
    if refused and names_structured_output(text, status=status):
        return False  # a refused structured-output mode is no outage
    told = headers.get("x-should-retry")
    if told in ("true", "false"):
        return told == "true"
    return status >= 500 or status in _RETRIED_STATUSES


def unreadable_ca_bundle(exc: BaseException) -> str | None:
    """The message of a CA bundle that cannot be loaded (web/tls.CABundleError: a
    mistyped SSL_CERT_FILE, say), wherever httpx wrapped it; None for any other error."""
    from deepsearch.web.tls import CABundleError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, CABundleError):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def backoff_s(attempt: int, headers: httpx.Headers | None) -> float:
    """The pause before retry number `attempt` (0 for the first)."""
    wait = retry_after_s(headers) if headers is not None else None
    if wait is not None and 0 < wait <= MAX_RETRY_AFTER_S:
        return wait
    delay = min(INITIAL_RETRY_DELAY_S * 2.0 ** min(attempt, 1000), MAX_RETRY_DELAY_S)
    return delay * (1 - 0.25 * random.random())


class ChatStream:
    """The chunks (parsed JSON objects) of one streamed reply; `close()` hangs up.
    Raises StreamCutOff when the stream ends or breaks before the reply's end."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.finished = False  # a finish_reason was read

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[dict[str, Any]]:
        data: list[str] = []
        done = False
        async for line in self._lines():
            # After [DONE] the rest is read, unparsed, so the connection can serve the
            # next call; comments (": keep-alive"), `event:`, `id:` carry no chunk.
            if done:
                continue
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line == "" and data:  # a blank line ends an event
                event, data = "\n".join(data), []
                done = event.startswith("[DONE]")
                if not done:
                    yield self._seen(_chunk(event))
        if data and not data[0].startswith("[DONE]"):  # the last event, unterminated
            yield self._seen(_last_chunk("\n".join(data)))
        if not (done or self.finished or (data and data[0].startswith("[DONE]"))):
            raise StreamCutOff("the stream ended before the reply did (no finish_reason)")

    async def _lines(self) -> AsyncIterator[str]:
        import httpx

        lines = self._response.aiter_lines()
        while True:
            try:
                line = await anext(lines)
            except StopAsyncIteration:
                return
            except httpx.TransportError as exc:  # the connection broke mid-reply
                raise StreamCutOff(f"the stream broke ({type(exc).__name__})") from None
            yield line

    def _seen(self, chunk: dict[str, Any]) -> dict[str, Any]:
        for part in chunk.get("choices") or []:
            if isinstance(part, dict) and part.get("finish_reason"):
                self.finished = True
        return chunk

    async def close(self) -> None:
        await self._response.aclose()


def _last_chunk(event: str) -> dict[str, Any]:
    """An event the stream ended inside of: cut off when it does not parse."""
    try:
        return _chunk(event)
    except WireError as exc:
        if exc.body is not None:  # an error object the server sent
            raise
        raise StreamCutOff("the stream ended inside an event") from None


def _chunk(event: str) -> dict[str, Any]:
    try:
        data = json.loads(event)
    except ValueError:
        raise WireError(f"unreadable stream event: {event[:80]!r}") from None
    if not isinstance(data, dict):
        raise WireError(f"unexpected stream event: {event[:80]!r}")
    if data.get("error"):
        error = data["error"]
        message = error.get("message") if isinstance(error, dict) else None
        text = (
            message
            if isinstance(message, str) and message
            else "An error occurred during streaming"
        )
        raise WireError(text, body=error)
    return data


class ChatWire:
    """Streamed chat completions of one endpoint over one httpx client (injectable:
    a test passes its own client or transport)."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        read_timeout_s: float,
        connect_timeout_s: float,
        max_retries: int,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self._timeouts = (read_timeout_s, connect_timeout_s)
        self.max_retries = max_retries
        self._client = http_client
        self._own_client = http_client is None
        self.sleep: Sleep = asyncio.sleep  # the retry pause (a test records it instead)
        self.stall = StallGuard()

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            from deepsearch.web.tls import client_context

            read, connect = self._timeouts
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(read, connect=connect),
                follow_redirects=True,
                verify=client_context(),
            )
        return self._client

    async def open(self, body: dict[str, Any], attempts: Attempts | None = None) -> ChatStream:
        """POST `body` (retried as the module doc says); the stream of a 2xx answer.
        `attempts` carries the call's retry count across a cut-off stream's resends."""
        content = json.dumps(body).encode()
        headers = {
            "Authorization": f"Bearer {self._api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        attempts = attempts or Attempts()
        while True:
            answered, stream = await self._attempt(content, headers, attempts.count)
            if stream is not None:
                return stream
            status, retry_headers = answered if answered is not None else (None, None)
            if status is not None:  # an error status, to be retried
                attempts.last_status = status
            wait = backoff_s(attempts.count, retry_headers)
            with retry_pause(status, wait):  # told: a notice, and the call's phase
                await self.sleep(wait)
            attempts.count += 1

    async def reply(
        self, body: dict[str, Any], limits: CallLimits, clock: Clock | None
    ) -> StreamedReply:
        """The whole streamed reply to `body`, read under `limits` (`streaming.collect`,
        `StallGuard`); the retries and a cut-off stream's resends share one count."""
        tries, opened = Attempts(), lambda: self.open(body, tries)
        retry, limits = (lambda _cut: self.retry_cut_off(tries)), self.stall.limits(limits)
        try:
            reply = await collect(opened, limits, clock, retry=retry)
        except CallTimedOut as exc:  # a limit cut the retries of an error status short?
            exc.answered, exc.retries = tries.last_status, tries.count
            self.stall.saw(exc)
            raise
        self.stall.saw(None)
        return reply

    async def retry_cut_off(self, attempts: Attempts) -> bool:
        """Whether a cut-off stream is sent again (after the backoff pause)."""
        if attempts.count >= self.max_retries:
            return False
        await self.sleep(backoff_s(attempts.count, None))
        attempts.count += 1
        return True

    async def _attempt(
        self, content: bytes, headers: dict[str, str], attempt: int
    ) -> tuple[tuple[int, httpx.Headers] | None, ChatStream | None]:
        """One POST: (None, stream) on success, ((status, headers to wait by), None) for an
        error status to retry, (None, None) for no answer to retry; raises when not."""
        import httpx

        from deepsearch.web.tls import CABundleError

        last = attempt >= self.max_retries
        request = self.client.build_request("POST", self.url, content=content, headers=headers)
        try:
            response = await self.client.send(request, stream=True)
        except CABundleError as exc:  # configuration: retrying cannot help
            raise WireConnectionError(str(exc)) from None
        except httpx.TimeoutException:
            if last:
                raise WireTimeout("Request timed out.") from None
            return None, None
        except httpx.TransportError as exc:
            if bundle := unreadable_ca_bundle(exc):  # configuration: retrying cannot help
                raise WireConnectionError(bundle) from None
            if last:
                raise WireConnectionError("Connection error.") from None
            return None, None
        if response.status_code < 400:
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind.startswith(_NOT_API_TYPES):
                await response.aclose()
                raise WireUnusable(
                    f"this endpoint does not answer like an OpenAI API ({kind}): check its "
                    "URL (an OpenAI-compatible one usually ends in /v1)",
                    status_code=response.status_code,
                )
            return None, ChatStream(response)
        try:
            text = (await response.aread()).decode("utf-8", "replace")
        finally:
            await response.aclose()
        if response.status_code == 429 and QUOTA_CODE in text:
            detail = status_error(429, text).message.removeprefix("Error code: 429 - ")
            raise WireUnusable(
                f"the account's quota is exhausted (HTTP 429 {QUOTA_CODE}: {detail}); add "
                "credit or use another key (retrying cannot help)",
                status_code=429,
            )
        if last or not should_retry(response.status_code, response.headers, content, text):
            raise status_error(response.status_code, text)
        return (response.status_code, response.headers), None

    async def aclose(self) -> None:
        if self._client is not None and self._own_client:
            await self._client.aclose()
