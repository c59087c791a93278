"""The structured-output ladder the SDK providers share; each supplies only its wire calls.

A request with a JSON schema climbs the provider's rungs in order -- for OpenAI
`json_schema` (the schema sent natively) -> `json_object` (JSON mode, the schema in the
system prompt) -> `prompted` (plain text asked to be JSON); for Gemini the first two.
A provider's `send(mode)` raises `ModeRejected` when the endpoint refused the *mode*
(not the request): the next rung is tried. The first rung a model accepts is
remembered per model on the ladder, which lives on the provider instance, built once
per run: one rejection per model per run, not one per call. A remembered rung that is
rejected later raises that rejection's error (nothing lower is tried behind the
model's back). The client parses whatever text comes back (`parse`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from deepsearch.errors import ProviderError
from deepsearch.llm.base import Completion, CompletionRequest, OutputMode
from deepsearch.llm.provider_common import schema_instruction

# Rungs that send the schema natively (the rest carry it in the system prompt).
NATIVE_MODES: frozenset[OutputMode] = frozenset({"json_schema"})
PROMPTED_SCHEMA_MODES: frozenset[OutputMode] = frozenset({"json_object", "prompted"})

Send = Callable[[OutputMode], Awaitable[Completion]]


class ModeRejected(Exception):
    """The endpoint refused an output mode; `error` is what to raise if no rung is left."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(str(error))
        self.error = error


def system_for(request: CompletionRequest, mode: OutputMode) -> str:
    """The system prompt for `mode`: with the schema appended when the mode does not
    send it natively."""
    if request.json_schema is not None and mode in PROMPTED_SCHEMA_MODES:
        return request.system + schema_instruction(request.json_schema)
    return request.system


class OutputModeLadder:
    """The rungs of one provider and the rung each model accepted (see module doc)."""

    def __init__(self, rungs: tuple[OutputMode, ...]) -> None:
        if not rungs or rungs[-1] in NATIVE_MODES:
            raise ValueError("the last rung must carry the schema in the prompt")
        self.rungs = rungs
        self.remembered: dict[str, OutputMode] = {}

    async def complete(
        self, request: CompletionRequest, send: Send, *, native: bool = True
    ) -> Completion:
        """Free text in `text` mode; a schema up the ladder.

        `native=False` (the schema is one the provider's dialect cannot express) skips
        the native rungs and remembers nothing: the choice says nothing about the model.
        """
        if request.json_schema is None:
            return await send("text")
        if not native:
            return await self._climb(request.settings.model, send, self._prompted_rungs(), False)
        model = request.settings.model
        known = self.remembered.get(model)
        return await self._climb(model, send, (known,) if known else self.rungs, True)

    def _prompted_rungs(self) -> tuple[OutputMode, ...]:
        return tuple(mode for mode in self.rungs if mode not in NATIVE_MODES)

    async def _climb(
        self, model: str, send: Send, rungs: tuple[OutputMode, ...], remember: bool
    ) -> Completion:
        last_error: ProviderError | None = None
        for mode in rungs:
            try:
                completion = await send(mode)
            except ModeRejected as exc:
                last_error = exc.error
                continue
            if remember:
                self.remembered[model] = mode
            return completion
        assert last_error is not None  # `rungs` is never empty
        raise last_error
