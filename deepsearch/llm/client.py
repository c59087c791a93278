"""`LLMClient`: the one object the agent talks to for every LLM call.

It owns what is common to all providers: the per-tool model table, the budget
check before each call, usage accounting (estimated offline when a server omits
it), the lenient parse ladder, pydantic validation, one corrective retry, the
distilled-schema fallback, and tracing. Providers only move text.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from deepsearch.config import ModelSettings, ProviderName, Settings, ToolName
from deepsearch.errors import BudgetExceeded, ContextLengthError, StructuredOutputError
from deepsearch.llm.base import (
    Completion,
    CompletionRequest,
    EmbeddingProvider,
    LLMProvider,
    Message,
    Usage,
)
from deepsearch.llm.call_watch import watched_call
from deepsearch.llm.parse import ParseFailure, parse_json_lenient
from deepsearch.llm.prices import Price, PriceBook
from deepsearch.llm.provider_common import Embeddings
from deepsearch.llm.reply_checks import has_non_finite, is_complete_json, summarize, trim_to_limits
from deepsearch.llm.schema_dialects import (
    distill_schema,
    drop_inlined_nulls,
    inline_refs_lenient,
)
from deepsearch.llm.tokens import count_tokens, upper_bound_tokens
from deepsearch.llm.tracker import TokenTracker
from deepsearch.prompts import render

T = TypeVar("T", bound=BaseModel)
MIN_OUTPUT_TOKENS = 256
# Texts per embeddings request: under Gemini's 100-per-batch limit and OpenAI's 2048.
EMBED_BATCH = 96
TraceFn = Callable[[str, dict[str, Any]], None]


class ObjectResult(BaseModel, Generic[T]):
    value: T
    usage: Usage
    attempts: int = 1


class TextResult(BaseModel):
    text: str
    usage: Usage


@lru_cache(maxsize=256)
def json_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """`schema`'s JSON schema, generated once per class: schemas are immutable classes
    and generating it is not cheap (the result is shared: never mutate it)."""
    return schema.model_json_schema()


@lru_cache(maxsize=256)
def reply_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """`json_schema_of` with its `$ref`s inlined, once per class: every reply's nulls are
    dropped against it, and inlining copies the whole schema (shared: never mutate it)."""
    return inline_refs_lenient(json_schema_of(schema))


def _retry_prompt(problem: str, finish_reason: str | None) -> str:
    """The corrective retry's message: what was wrong, and a nudge when it was cut off."""
    cut_off = render("llm/retry_cut_off") + "\n" if finish_reason == "length" else ""
    return render("llm/retry", problem=problem, cut_off=cut_off)


class LLMClient:
    """Structured and free-text generation over one provider, with budget and usage."""

    def __init__(
        self,
        *,
        provider: LLMProvider,
        provider_name: ProviderName,
        settings: Settings,
        tracker: TokenTracker,
        embedder: EmbeddingProvider | None = None,
        trace: TraceFn | None = None,
    ) -> None:
        self.provider = provider
        self.provider_name = provider_name
        self.settings = settings
        self.tracker = tracker
        self.embedder = embedder
        self._trace = trace
        self._slots = asyncio.Semaphore(settings.llm.concurrency)
        # Calls sent on the byte bound whose reported usage is still to be compared
        # with an exact count: (prompt text, model, reported prompt tokens). See _plan.
        self._owed: list[tuple[str, str, int]] = []
        self._bound_ok = True  # False once a server counted more than a bound allowed
        self.prices = PriceBook.for_run(settings, provider_name)  # each call is priced

    @property
    def context_window(self) -> int:
        return self.settings.context_window(self.provider_name)

    def model_for(self, tool: ToolName) -> str:
        return self.settings.tool_settings(self.provider_name, tool).model

    def price_for(self, tool: ToolName) -> Price | None:
        """What the tool's model costs (None: unknown, llm/prices.py)."""
        return self.prices.price_of(self.model_for(tool))

    # ------------------------------------------------------------ public API

    async def generate_object(
        self, tool: ToolName, schema: type[T], system: str, messages: Sequence[Message]
    ) -> ObjectResult[T]:
        """Return a validated `schema` instance or raise StructuredOutputError. Never loops."""
        json_schema = json_schema_of(schema)
        history = list(messages)
        completion, usage = await self._call(tool, system, history, json_schema, schema.__name__)
        value, problem = self._validate(schema, completion)
        if value is not None:
            return ObjectResult(value=value, usage=usage, attempts=1)

        # One corrective retry: show the model exactly what was wrong.
        history += [
            Message(role="assistant", content=completion.text[:4000]),
            Message(role="user", content=_retry_prompt(problem, completion.finish_reason)),
        ]
        retry, retry_usage = await self._call(tool, system, history, json_schema, schema.__name__)
        usage = usage + retry_usage
        value, problem = self._validate(schema, retry)
        if value is not None:
            return ObjectResult(value=value, usage=usage, attempts=2)

        # The same invalid reply twice: the model cannot do better, asking again wastes
        # a call. Else, last resort: a distilled schema on the fallback model, when it
        # is another model, extracting from the reply.
        if retry.text == completion.text or self.model_for("fallback") == self.model_for(tool):
            raise self._no_valid(tool, schema, problem, retry.text)
        source = retry.text if retry.text.strip() else completion.text
        fb_system = render("llm/fallback")
        fb_messages = [Message(role="user", content=source[:8000] or render("llm/empty_reply"))]
        fallback, fb_usage = await self._call(
            "fallback", fb_system, fb_messages, distill_schema(json_schema), schema.__name__
        )
        usage = usage + fb_usage
        value, problem = self._validate(schema, fallback)
        if value is not None:
            return ObjectResult(value=value, usage=usage, attempts=3)
        raise self._no_valid(tool, schema, problem, fallback.text, fb=True)

    def _no_valid(
        self, tool: ToolName, schema: type[BaseModel], problem: str, raw: str, *, fb: bool = False
    ) -> StructuredOutputError:
        model, after = self.model_for(tool), "a retry and the fallback" if fb else "a retry"
        text = f"{self.provider_name} model {model!r} gave no valid {schema.__name__} after {after}"
        return StructuredOutputError(
            f"{text}: {problem}", provider=self.provider_name, model=model, raw=raw[:2000]
        )

    async def generate_text(
        self, tool: ToolName, system: str, messages: Sequence[Message]
    ) -> TextResult:
        completion, usage = await self._call(tool, system, list(messages), None, "text")
        return TextResult(text=completion.text, usage=usage)

    async def embed(self, texts: Sequence[str]) -> list[list[float]] | None:
        """Embeddings when the provider offers them; None means 'use the lexical backend'.

        Budgeted like any LLM call: None (no request) when the remaining budget is
        below the estimated input tokens. Inputs go in requests of at most
        EMBED_BATCH texts; each request's tokens are recorded under "embedding"
        (the server's count when reported, else the offline estimate).
        """
        if self.embedder is None or not texts:
            return None
        items = list(texts)
        model = self.settings.llm.embedding_model or ""
        estimates = [count_tokens(text, model=model) for text in items]
        price = self.prices.price_of(model or self.settings.llm.jina_embedding_model or "")
        hold = self.tracker.call_hold(sum(estimates), 0, price)
        unaffordable = self.tracker.max_cost is not None and (
            price is None or hold > self.tracker.remaining_usd
        )
        if self.tracker.remaining < sum(estimates) or unaffordable:
            self._emit("llm_embed_skipped", {"count": len(items), "tokens": sum(estimates)})
            return None
        vectors: list[list[float]] = []
        total = Usage()
        for start in range(0, len(items), EMBED_BATCH):
            batch = items[start : start + EMBED_BATCH]
            estimate = sum(estimates[start : start + EMBED_BATCH])
            with self.tracker.hold(self.tracker.call_hold(estimate, 0, price)):
                async with self._slots:
                    got, reported = await self._embed_batch(batch)
            usage = Usage(prompt_tokens=reported or estimate, estimated=reported is None)
            self.tracker.record("embedding", usage, price.cost(usage) if price else None)
            total = total + usage
            vectors += got
        self._emit(
            "llm_embed",
            {
                "model": model,
                "count": len(items),
                "requests": -(-len(items) // EMBED_BATCH),
                "tokens": total.prompt_tokens,
                "estimated": total.estimated,
            },
        )
        return vectors

    async def ping(self) -> None:
        """Prove the endpoint answers and accepts the key; raises ProviderError if not.

        Costs no tokens and records nothing: a model listing, not a completion.
        """
        await self.provider.ping()

    async def aclose(self) -> None:
        await self.provider.aclose()

    # ------------------------------------------------------------ internals

    def _validate(self, schema: type[T], completion: Completion) -> tuple[T | None, str]:
        text = completion.text
        if completion.finish_reason == "length" and not is_complete_json(text):
            # Repairing a reply cut off mid-JSON would validate a truncated answer.
            return None, render("llm/problem_cut_off")
        try:
            data = parse_json_lenient(text)
        except ParseFailure as exc:
            return None, str(exc)
        if has_non_finite(data):  # NaN/Infinity parse in Python but are never valid JSON
            return None, render("llm/problem_non_finite")
        # Strict mode sends null for an optional field it had to make nullable.
        data = drop_inlined_nulls(reply_schema_of(schema), data)
        try:
            return schema.model_validate(data), ""
        except ValidationError as exc:
            trimmed = trim_to_limits(data, exc)
            if trimmed is not data:
                try:
                    return schema.model_validate(trimmed), ""
                except ValidationError as exc2:
                    exc = exc2
            return None, summarize(exc)

    async def _call(
        self,
        tool: ToolName,
        system: str,
        messages: list[Message],
        json_schema: dict[str, Any] | None,
        schema_name: str,
    ) -> tuple[Completion, Usage]:
        model_settings = self.settings.tool_settings(self.provider_name, tool)
        prompt_text = system + "".join(m.content for m in messages)
        if json_schema is not None:
            prompt_text += json.dumps(json_schema)
        price = self.prices.price_of(model_settings.model)
        prompt_estimate, max_tokens = self._plan(prompt_text, model_settings)
        # Under a cost limit, the call's worst case is held while it is in flight.
        sized = prompt_estimate if prompt_estimate is not None else upper_bound_tokens(prompt_text)
        held = self.tracker.call_hold(sized, max_tokens, price)
        request = CompletionRequest(
            tool=tool,
            settings=model_settings,
            system=system,
            messages=messages,
            json_schema=json_schema,
            schema_name=schema_name,
            max_tokens=max_tokens,
        )
        self._emit("llm_request", request.model_dump(mode="json"))
        with self.tracker.hold(held), watched_call(tool, schema_name):  # (call_watch)
            async with self._slots:
                completion = await self.provider.complete(request)
        usage = completion.usage
        if usage is None or usage.total_tokens <= 0:  # the server omitted it: count it
            if prompt_estimate is None:
                prompt_estimate = count_tokens(prompt_text, model=model_settings.model)
            usage = Usage(
                prompt_tokens=prompt_estimate,
                completion_tokens=count_tokens(completion.text, model=model_settings.model),
                estimated=True,
            )
        self.tracker.record(tool, usage, price.cost(usage) if price is not None else None)
        if not usage.estimated:
            self._calibrate(prompt_text, model_settings.model, prompt_estimate, usage)
        self._emit(
            "llm_response",
            {
                "tool": tool,
                "text": completion.text,
                "mode": completion.mode,
                "strict": completion.strict,
                "finish_reason": completion.finish_reason,
                "usage": usage.model_dump(),
            },
        )
        return completion, usage

    def _plan(self, prompt_text: str, model: ModelSettings) -> tuple[int | None, int]:
        """(prompt estimate, output cap) of a call; the estimate is None when the
        request goes out without an exact count.

        The exact count needs the vocabulary (~0.5 s of CPU to build, once a
        process). A prompt is first sized with a bound its count never exceeds
        (its UTF-8 bytes); when even that bound gives the full wanted output cap,
        an exact count cannot change the request, so none is made. The server's
        reported usage is what the tracker records; the calibration it owes is
        settled (counted exactly) only when a later call needs an exact count.
        """
        if self._bound_ok:
            try:
                if self._output_cap(upper_bound_tokens(prompt_text), model) == model.max_tokens:
                    self._prepare_provider()
                    return None, model.max_tokens
            except (ContextLengthError, BudgetExceeded):
                pass  # the bound is too coarse here: count exactly
        self.settle_calibration()
        estimate = count_tokens(prompt_text, model=model.model)
        return estimate, self._output_cap(estimate, model)

    def _calibrate(self, text: str, model: str, estimate: int | None, usage: Usage) -> None:
        """Learn the provider/offline ratio from reported usage; owed when uncounted."""
        if estimate is not None:
            self.tracker.calibrate(prompt_estimate=estimate, reported=usage.prompt_tokens)
            return
        self._owed.append((text, model, usage.prompt_tokens))
        # The bound sized this call's reservation: a server counting more than the
        # bound allowed for makes the bound unsafe, so every call is counted from now.
        if usage.prompt_tokens > upper_bound_tokens(text) * self.tracker.prompt_ratio:
            self._bound_ok = False
            self.settle_calibration()

    def settle_calibration(self) -> None:
        """Count the prompts sent on the bound and calibrate from them, as if each
        had been counted when sent (before anything relies on the exact ratio)."""
        owed, self._owed = self._owed, []
        for text, model, reported in owed:
            estimate = count_tokens(text, model=model)
            self.tracker.calibrate(prompt_estimate=estimate, reported=reported)

    def _output_cap(self, prompt_estimate: int, model: ModelSettings) -> int:
        """The output-token cap for a prompt of `prompt_estimate` tokens, or raise."""
        if prompt_estimate > self.context_window:
            raise ContextLengthError(
                f"prompt of ~{prompt_estimate} tokens exceeds the {self.context_window}-token "
                f"context window of {model.model}",
                provider=self.provider_name,
                model=model.model,
            )
        max_tokens = self.tracker.reserve(
            prompt_estimate=prompt_estimate,
            wanted_output=model.max_tokens,
            price=self.prices.price_of(model.model),
        )
        # Prompt and output share the model's window: never ask for more than is left.
        room = self.context_window - int(prompt_estimate * self.tracker.prompt_ratio)
        if room < MIN_OUTPUT_TOKENS:
            raise ContextLengthError(
                f"prompt of ~{prompt_estimate} tokens leaves no room for output in the "
                f"{self.context_window}-token context window of {model.model}",
                provider=self.provider_name,
                model=model.model,
            )
        return min(max_tokens, room)

    def _prepare_provider(self) -> None:
        """Import the provider's SDK now, before the vocabulary thread starts: both
        are CPU-bound, and the request needs only the SDK."""
        prepare = getattr(self.provider, "prepare", None)
        if callable(prepare):
            prepare()

    async def _embed_batch(self, batch: list[str]) -> tuple[list[list[float]], int | None]:
        """Vectors and the server-reported token count (None when unreported)."""
        assert self.embedder is not None
        with_usage = getattr(self.embedder, "embed_with_usage", None)
        if with_usage is None:  # a plain EmbeddingProvider reports no usage
            return await self.embedder.embed(batch), None
        result: Embeddings = await with_usage(batch)
        return result.vectors, result.prompt_tokens

    def trace_note(self, kind: str, payload: dict[str, Any]) -> None:
        """A record for the --trace file from the run (what a prompt left out)."""
        self._emit(kind, payload)

    def _emit(self, kind: str, payload: dict[str, Any]) -> None:
        if self._trace is not None:
            self._trace(kind, payload)
