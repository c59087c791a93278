"""The Starlette app: `GET /v1/models`, `POST /v1/chat/completions`, `GET /health`.

Behind `guard.RequestGuard` (on loopback only loopback Host names, no foreign Origin,
JSON POSTs only); a body nested past `guard.MAX_JSON_DEPTH` is a 400.

Every `/v1` route needs `Authorization: Bearer <key>` when the server has a key
(compared in constant time). At most `max_concurrent` researches run at once; one more
is answered 429 with `Retry-After` at once, never queued. One log line per request
(id, HTTP status, run status, tokens, seconds); the question only with `--trace`.
"""

from __future__ import annotations

import hmac
import json
import time
import uuid
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from deepsearch.server import shapes
from deepsearch.server.guard import RequestGuard, nesting_problem, too_deep
from deepsearch.server.request import RequestError, conversation, parse_request, run_settings
from deepsearch.server.state import ServerConfig, ServerState

MAX_BODY_BYTES = 2 * 1024 * 1024
RETRY_AFTER_S = 5


def error_response(status: int, body: dict[str, Any], **headers: str) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers or None)


def authorized(request: Request, key: str | None) -> bool:
    if key is None:
        return True
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    expected = key.encode()
    # compare_digest on equal-purpose byte strings: the time does not depend on the match.
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), expected)


def unauthorized() -> JSONResponse:
    body = shapes.error_body(
        "missing or wrong API key: send Authorization: Bearer <key>", code="invalid_api_key"
    )
    return error_response(401, body, **{"WWW-Authenticate": "Bearer"})


def create_app(config: ServerConfig) -> Starlette:
    state = ServerState(config)

    async def models(request: Request) -> Response:
        if not authorized(request, config.api_key):
            state.log(f"models-{uuid.uuid4().hex[:12]}", 401, time.monotonic())
            return unauthorized()
        model = request.path_params.get("model")
        if model is None:
            return JSONResponse(shapes.models_list())
        if model not in shapes.MODEL_IDS:
            return model_not_found(model)
        return JSONResponse(shapes.models_list()["data"][0])

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def chat(request: Request) -> Response:
        return await chat_completions(request, state)

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return error_response(status, shapes.error_body(str(detail), code=str(status)))

    app = Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model:path}", models, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ],
        exception_handlers={HTTPException: http_error},
        middleware=[Middleware(RequestGuard, loopback=config.loopback)],
    )
    app.state.deepsearch = state  # for the server's shutdown (serve_cmd)
    return app


def model_not_found(model: str) -> JSONResponse:
    """OpenAI's answer to a model it does not have (the ids of /v1/models are the names
    this server answers to)."""
    known = ", ".join(shapes.MODEL_IDS)
    body = shapes.error_body(
        f"the model {model!r} does not exist (this server serves: {known})",
        param="model",
        code="model_not_found",
    )
    return error_response(404, body)


async def read_json(request: Request) -> Any:
    """The JSON body, refused once it grows past MAX_BODY_BYTES (never read whole first)."""
    too_big = RequestError(f"the request body is larger than {MAX_BODY_BYTES} bytes")
    declared = request.headers.get("content-length", "0")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_big
    parts, size = [], 0
    try:
        async for part in request.stream():
            size += len(part)
            if size > MAX_BODY_BYTES:  # a chunked upload declares no length
                raise too_big
            parts.append(part)
    except ClientDisconnect:  # gone mid-body (or cut at the read deadline)
        raise RequestError("the client went away before sending the whole body") from None
    try:
        value = json.loads(b"".join(parts))
    except RecursionError:  # the parser's own limit: a 500 and a traceback before
        raise RequestError(too_deep()) from None
    except ValueError:
        raise RequestError("the request body is not valid JSON") from None
    if (deep := nesting_problem(value)) is not None:
        raise RequestError(deep)
    return value


async def chat_completions(request: Request, state: ServerState) -> Response:
    from deepsearch.server.stream import ResearchResponse

    config = state.config
    started = time.monotonic()
    request_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    if not authorized(request, config.api_key):
        state.log(request_id, 401, started)
        return unauthorized()
    try:
        chat = parse_request(await read_json(request))
        question, turns = conversation(chat.messages)
        settings = run_settings(config.settings, chat, config.max_budget)
    except RequestError as exc:
        state.log(request_id, 400, started)
        return error_response(400, shapes.error_body(str(exc), param=exc.param))
    if chat.model not in shapes.MODEL_IDS:
        state.log(request_id, 404, started)
        return model_not_found(chat.model)
    if state.stopping:  # on a connection opened before the shutdown began
        state.log(request_id, 503, started, question=question)
        return error_response(503, shapes.stopping_body("the server is shutting down"))
    if state.active >= config.max_concurrent:
        state.log(request_id, 429, started, question=question)
        message = f"all {config.max_concurrent} research slots are busy; retry later"
        body429 = shapes.error_body(message, kind="rate_limit_error", code="server_busy")
        return error_response(429, body429, **{"Retry-After": str(RETRY_AFTER_S)})
    state.active += 1  # released by the response when its run is over
    # Starlette awaits whatever ASGI app an endpoint returns; its types only say Response.
    return ResearchResponse(  # type: ignore[return-value]
        state,
        request_id=request_id,
        chat=chat,
        question=question,
        turns=turns,
        settings=settings,
        started=started,
    )
