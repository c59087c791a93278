"""The response of one chat completion, as a raw ASGI callable: it runs the research,
streams it (SSE) or sends it whole, and cancels it when the client goes away.

A disconnect is seen by listening on `receive()` for `http.disconnect` while the run
works, for streamed and whole responses alike, so a client that hangs up during a long
LLM call stops its run at once (not at the next write). Run output, the end of the
run and a disconnect all arrive on one queue, in order.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

from deepsearch.agent.result import ResearchResult
from deepsearch.frontend.output import clean_block, safe_result
from deepsearch.server import shapes
from deepsearch.server.research import RequestRun

if TYPE_CHECKING:
    from deepsearch.agent.types import KnowledgeItem
    from deepsearch.config import Settings
    from deepsearch.server.request import ChatRequest
    from deepsearch.server.state import ServerState

CLIENT_GONE = 499  # logged, never sent (nginx's "client closed request")
CANCEL_WAIT_S = 10.0


class _Finished:
    """Queue marker: the run is over."""


class _Gone:
    """Queue marker: the client disconnected."""


class _Stop:
    """Queue marker: the server is shutting down."""

    def __init__(self, why: str) -> None:
        self.why = why


class ClientGone(Exception):
    pass


class ServerStopping(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def failed(result: ResearchResult) -> bool:
    """No answer, or a run that could not go on (a partial answer goes in the error)."""
    return (
        result.status == "failed"
        or not result.answer
        or result.error_kind in ("fatal", "configuration")
    )


class ResearchResponse:
    def __init__(
        self,
        state: ServerState,
        *,
        request_id: str,
        chat: ChatRequest,
        question: str,
        turns: list[KnowledgeItem],
        settings: Settings,
        started: float,
    ) -> None:
        self.state = state
        self.id = request_id
        self.chat = chat
        self.question = question
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.job = RequestRun(
            question,
            turns,
            settings,
            trace_path=state.config.trace,
            request_id=request_id,
            on_text=self.queue.put_nowait,
        )
        self.started = started
        self.created = int(time.time())
        self.result: ResearchResult | None = None

    def stop(self, why: str) -> None:
        """The server is shutting down: end the run now and answer (ServerState)."""
        self.queue.put_nowait(_Stop(why))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.create_task(self.job.execute())
        task.add_done_callback(lambda _: self.queue.put_nowait(_Finished()))
        watcher = asyncio.create_task(self._watch(receive))
        self.state.in_flight.add(self)
        status = 500  # unless the response below says otherwise
        try:
            if self.chat.stream:
                status = await self._stream(send, task)
            else:
                status = await self._whole(send, task)
        except ClientGone:
            status = CLIENT_GONE
        except ServerStopping as stopping:
            status = await self._stopped(send, task, stopping.why)
        finally:
            self.state.in_flight.discard(self)
            watcher.cancel()
            await self._cancel(task)  # the client is gone: the LLM call in flight is cancelled
            self.state.active -= 1
            self._log(status)

    async def _cancel(self, task: asyncio.Task[ResearchResult]) -> None:
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=CANCEL_WAIT_S)

    async def _stopped(self, send: Send, task: asyncio.Task[ResearchResult], why: str) -> int:
        """The run cut short by the shutdown, at once (as a disconnect cuts it): a 503
        in OpenAI's error shape, or in a stream an error event and `[DONE]`, with what
        was found so far as `partial_answer`."""
        await self._cancel(task)
        run = self.job.run
        self.result = run.snapshot("interrupted", error=why) if run is not None else None
        partial = self.result.answer if self.result is not None else ""
        body = shapes.stopping_body(why, partial_answer=partial or None, status="interrupted")
        try:
            if not self.chat.stream:
                await self._send_json(send, 503, body)
                return 503
            await self._body(send, shapes.sse(body))
            await self._body(send, shapes.DONE, more=False)
        except ClientGone:
            return CLIENT_GONE
        return 200  # the stream's status, sent before the shutdown

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.queue.put_nowait(_Gone())
                return

    async def _next(self) -> object:
        item = await self.queue.get()
        if isinstance(item, _Gone):
            raise ClientGone
        if isinstance(item, _Stop):
            raise ServerStopping(item.why)
        return item

    async def _finish(self, task: asyncio.Task[ResearchResult]) -> ResearchResult:
        """Wait for the end of the run, passing each piece of reasoning to the caller."""
        while not isinstance(await self._next(), _Finished):
            pass
        return self._result(task)

    def _result(self, task: asyncio.Task[ResearchResult]) -> ResearchResult:
        """The run's result cleaned as the CLI cleans it: no control character from a
        source or the model reaches a client (which may print the text raw)."""
        self.result = safe_result(task.result())
        return self.result

    # ------------------------------------------------------------ whole

    async def _whole(self, send: Send, task: asyncio.Task[ResearchResult]) -> int:
        result = await self._finish(task)
        if failed(result):
            await self._send_json(send, 500, self._failure(result))
            return 500
        body = shapes.completion(
            self.id,
            result,
            reasoning=clean_block("".join(self.job.reasoning)),
            max_urls=self.chat.max_returned_urls,
        )
        await self._send_json(send, 200, body)
        return 200

    async def _send_json(self, send: Send, status: int, body: dict[str, Any]) -> None:
        import json

        data = json.dumps(body, ensure_ascii=False).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
            (b"x-request-id", self.id.encode()),
        ]
        await self._send(
            send, {"type": "http.response.start", "status": status, "headers": headers}
        )
        await self._send(send, {"type": "http.response.body", "body": data})

    # ------------------------------------------------------------ streamed

    async def _stream(self, send: Send, task: asyncio.Task[ResearchResult]) -> int:
        headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),  # proxies must not hold the events back
            (b"x-request-id", self.id.encode()),
        ]
        await self._send(send, {"type": "http.response.start", "status": 200, "headers": headers})
        await self._event(send, {"role": "assistant", "content": "", "reasoning_content": ""})
        while not isinstance(item := await self._next(), _Finished):
            await self._event(send, {"reasoning_content": clean_block(str(item))})
        result = self._result(task)
        if failed(result):
            await self._body(send, shapes.sse(self._failure(result)))
        else:
            await self._answer(send, result)
        await self._body(send, shapes.DONE, more=False)
        return 200

    async def _answer(self, send: Send, result: ResearchResult) -> None:
        for piece in shapes.answer_pieces(result.answer):
            await self._event(send, {"content": piece})
        # With stream_options.include_usage, as OpenAI: the usage in a last chunk of its
        # own (`choices: []`), null on every other; without, on the finish chunk.
        separate = self.chat.include_usage
        final = shapes.chunk(
            self.id,
            self.created,
            {"annotations": shapes.url_annotations(result.answer, result.references)},
            finish=shapes.finish_reason(result),
            usage=None if separate else shapes.usage(result),
            **shapes.extras(result, self.chat.max_returned_urls),
        )
        await self._body(send, final)
        if separate:
            await self._body(send, shapes.usage_chunk(self.id, self.created, result))

    async def _event(self, send: Send, delta: dict[str, Any]) -> None:
        extra = {"usage": None} if self.chat.include_usage else {}
        await self._body(send, shapes.chunk(self.id, self.created, delta, **extra))

    async def _body(self, send: Send, data: bytes, *, more: bool = True) -> None:
        await self._send(send, {"type": "http.response.body", "body": data, "more_body": more})

    async def _send(self, send: Send, message: dict[str, Any]) -> None:
        try:
            await send(message)
        except OSError:  # uvicorn: the client closed the connection
            raise ClientGone from None

    # ------------------------------------------------------------ helpers

    def _failure(self, result: ResearchResult) -> dict[str, Any]:
        """The 500 body: what went wrong, and the partial answer if there is one."""
        mask = self.state.config.mask
        message = mask(result.error or f"the research ended without an answer ({result.status})")
        return shapes.error_body(
            message,
            kind="server_error",
            code="research_failed",
            partial_answer=result.answer or None,
            status=result.status,
        )

    def _log(self, status: int) -> None:
        result = self.result
        with suppress(Exception):  # the log must never break a response
            self.state.log(
                self.id,
                status,
                self.started,
                outcome=result.status if result else "cancelled",
                tokens=result.usage.total_tokens if result else self._spent(),
                question=self.question,
            )

    def _spent(self) -> int:
        run = self.job.run
        return run.deps.llm.tracker.used if run is not None else 0
