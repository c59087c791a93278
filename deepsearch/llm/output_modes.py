"""The structured-output ladder the SDK providers share; each supplies only its wire calls.

A request with a JSON schema climbs the provider's rungs in order -- for an
OpenAI-compatible server `json_schema` (the schema sent natively) ->
`json_object_schema` (`{"type": "json_object", "schema": S}`, llama-cpp-python's form)
-> `json_object` (JSON mode, the schema in the system prompt) -> `prompted` (plain
text asked to be JSON); for Gemini `json_schema` -> `json_object`. A provider's
`send(mode)` raises `ModeRejected` when the endpoint refused the *mode* (a 4xx or 5xx
whose body names the structured-output request): the next rung is tried at once.

The first rung a model accepts is remembered per model on the ladder, which lives on
the provider instance, built once per run, and -- with a `RungMemory` -- on disk per
server and model, so the next run starts there: a refusal is met once, not once per
call or per run. Until a model's rung is known its calls climb one at a time (the
first one finds the rung, the others then use it). A rung remembered in this run that
is refused later raises that refusal (nothing lower is tried behind the model's
back); one remembered from an earlier run that is refused now climbs on from there
(the server changed), and a demotion kept on disk is re-checked after a day
(`rung_memory`). `why` says, per model, why its rung was chosen (for `doctor`).
The client parses whatever text comes back (`parse`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from deepsearch.errors import ProviderError
from deepsearch.llm.base import Completion, CompletionRequest, OutputMode
from deepsearch.llm.provider_common import schema_instruction

if TYPE_CHECKING:
    from deepsearch.llm.rung_memory import RungMemory

# Rungs that send the schema natively, for the server to enforce.
NATIVE_MODES: frozenset[OutputMode] = frozenset({"json_schema", "json_object_schema"})
# Rungs whose system prompt carries the schema too (a server may ignore a `schema`
# key next to json_object without saying so: the model must still know the shape).
PROMPTED_SCHEMA_MODES: frozenset[OutputMode] = frozenset(
    {"json_object_schema", "json_object", "prompted"}
)
# How a refused rung is named in `why`.
RUNG_WORDS: dict[str, str] = {
    "json_schema": "response_format json_schema",
    "json_object_schema": "json_object + schema",
    "json_object": "json_object (JSON mode)",
    "prompted": "prompted JSON",
}

Send = Callable[[OutputMode], Awaitable[Completion]]


class ModeRejected(Exception):
    """The endpoint refused an output mode; `error` is what to raise if no rung is left,
    `status` the HTTP status it came with (None if none)."""

    def __init__(self, error: ProviderError, status: int | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.status = status


def system_for(request: CompletionRequest, mode: OutputMode) -> str:
    """The system prompt for `mode`: with the schema appended for the rungs that carry it."""
    if request.json_schema is not None and mode in PROMPTED_SCHEMA_MODES:
        return request.system + schema_instruction(request.json_schema)
    return request.system


class OutputModeLadder:
    """The rungs of one provider and the rung each model accepted (see module doc)."""

    def __init__(
        self,
        rungs: tuple[OutputMode, ...],
        *,
        memory: RungMemory | None = None,
        server: str = "",
    ) -> None:
        if not rungs or rungs[-1] not in PROMPTED_SCHEMA_MODES or rungs[-1] in NATIVE_MODES:
            raise ValueError("the last rung must carry the schema in the prompt")
        self.rungs = rungs
        self.memory = memory
        self.server = server
        self.remembered: dict[str, OutputMode] = {}
        self.why: dict[str, str] = {}
        self._climbing: dict[str, asyncio.Lock] = {}

    async def complete(
        self, request: CompletionRequest, send: Send, *, native: bool = True
    ) -> Completion:
        """Free text in `text` mode; a schema up the ladder.

        `native=False` (the schema is one the provider's dialect cannot express) skips
        the native rungs and remembers nothing: the choice says nothing about the model.
        """
        if request.json_schema is None:
            return await send("text")
        model = request.settings.model
        if not native:
            return await self._climb(model, send, self._prompted_rungs(), remember=False)
        if model not in self.remembered:
            async with self._climbing.setdefault(model, asyncio.Lock()):
                if model not in self.remembered:
                    return await self._climb(model, send, self._start(model), remember=True)
        return await self._climb(model, send, (self.remembered[model],), remember=True)

    def _prompted_rungs(self) -> tuple[OutputMode, ...]:
        return tuple(mode for mode in self.rungs if mode not in NATIVE_MODES)

    def _start(self, model: str) -> tuple[OutputMode, ...]:
        """All rungs, or from the one an earlier run found for this server and model."""
        stored = self.memory.get(self.server, model) if self.memory is not None else None
        if stored is None or stored.mode not in self.rungs:
            return self.rungs
        self.why[model] = stored.why
        return self.rungs[self.rungs.index(stored.mode) :]

    async def _climb(
        self, model: str, send: Send, rungs: tuple[OutputMode, ...], *, remember: bool
    ) -> Completion:
        last_error: ProviderError | None = None
        refused: list[str] = []
        for mode in rungs:
            try:
                completion = await send(mode)
            except ModeRejected as exc:
                last_error = exc.error
                status = f" (HTTP {exc.status})" if exc.status is not None else ""
                refused.append(f"refuses {RUNG_WORDS.get(mode, mode)}{status}")
                continue
            if remember:
                self._remember(model, mode, refused)
            return completion
        assert last_error is not None  # `rungs` is never empty
        raise last_error

    def _remember(self, model: str, mode: OutputMode, refused: list[str]) -> None:
        if model in self.remembered:
            return
        self.remembered[model] = mode
        if refused or model not in self.why:
            self.why[model] = "; ".join(refused) or f"accepts {RUNG_WORDS.get(mode, mode)}"
        if self.memory is not None:
            demoted = mode != self.rungs[0]  # a refusal's rung: re-checked in a day
            self.memory.put(self.server, model, mode, self.why[model], demoted=demoted)
