"""The chat-completions request: validated knobs, the question and its conversation, and
the run settings they make (the server's defaults, capped by `--max-budget`).

Knobs follow node-DeepResearch's names. Precedence for the token budget:
`budget_tokens`, else `max_completion_tokens` (which also means one attempt per
evaluation check, as theirs), else `reasoning_effort` (100k / 500k / 1M, as `--effort`),
else the server's own budget; whatever wins is capped at `--max-budget`. `max_cost`
(US dollars) is the request's cost limit, never above the server's `--max-cost`.
`reasoning_effort` also applies the rest of its `--effort` preset (steps, evaluation
attempts, reflect, team size, re-check); the request's own knobs (`team_size`,
`no_direct_answer`, `max_completion_tokens`' one attempt) win over it. Fields this
server does not know (temperature, tools, ...) are ignored, as OpenAI-compatible
servers do.

A knob's JSON type is checked here; its bounds and its check are those of the
configuration key it sets (`KNOB_KEYS`), applied by config.with_overrides as a
flag's are: one bound and one message (`team_size: agent.team_size: Input should be
less than or equal to 8`) for the CLI, serve, mcp and the library alike.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
)

from deepsearch.agent.types import KnowledgeItem
from deepsearch.config import (
    EFFORT_BUDGETS,
    EFFORT_PRESETS,
    PRESET_KEYS,
    Effort,
    Settings,
    with_overrides,
)
from deepsearch.errors import ConfigError
from deepsearch.prompts import render
from deepsearch.text import MAX_QUESTION_CHARS

MAX_CONVERSATION_CHARS = MAX_QUESTION_CHARS  # every front end's (deepsearch.text)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class RequestError(Exception):
    """A bad request: OpenAI's `invalid_request_error` with the parameter at fault."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        """The text of the message (text parts joined); images and other parts dropped."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if p.type == "text" and p.text)


PositiveCount = Annotated[StrictInt, Field(ge=1, le=1000)]


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")
    include_usage: StrictBool = False


class ChatRequest(BaseModel):
    """A `POST /v1/chat/completions` body; unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")
    model: str = "deepsearch"
    messages: list[ChatMessage] = Field(min_length=1)
    stream: StrictBool = False
    # The research knobs: types only; bounds are their keys' (KNOB_KEYS, run_settings).
    budget_tokens: StrictInt | None = None
    reasoning_effort: Effort | None = None
    max_completion_tokens: StrictInt | None = None
    boost_hostnames: list[str] | None = None
    bad_hostnames: list[str] | None = None
    only_hostnames: list[str] | None = None
    max_returned_urls: PositiveCount = 100
    no_direct_answer: StrictBool = False
    max_annotations: StrictInt | None = None
    language_code: str | None = None
    team_size: StrictInt | None = None
    max_cost: StrictFloat | StrictInt | None = None  # US dollars; the server's --max-cost caps it
    n: StrictInt | None = None  # one research, one answer: only 1 is served
    stream_options: StreamOptions | None = None

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage


def parse_request(body: Any) -> ChatRequest:
    """The validated request, or a RequestError naming the first bad field."""
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    try:
        request = ChatRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise RequestError(f"{param}: {first['msg']}", param) from None
    if request.n is not None and request.n != 1:
        raise RequestError(
            f"n: {request.n} choices are not supported (one research gives one answer; "
            "send n=1 or leave it out)",
            "n",
        )
    return request


def conversation(messages: list[ChatMessage]) -> tuple[str, list[KnowledgeItem]]:
    """(question, earlier turns as knowledge). The last message must be the user's;
    each earlier user turn and the assistant reply after it become one `qa` item, pinned
    so that every step's prompt shows it. System and developer messages are dropped
    (the research prompts are ours), as node-DeepResearch does."""
    last = messages[-1]
    if last.role != "user":
        raise RequestError("messages: the last message must be the user's question", "messages")
    question = " ".join(last.text().split())
    if not question:
        raise RequestError("messages: the last user message has no text", "messages")
    turns = [m for m in messages[:-1] if m.role in ("user", "assistant")]
    total = len(question) + sum(len(m.text()) for m in turns)
    if total > MAX_CONVERSATION_CHARS:
        raise RequestError(
            f"messages: longer than {MAX_CONVERSATION_CHARS} characters in all", "messages"
        )
    return question, _turn_items(turns)


def _turn_items(turns: list[ChatMessage]) -> list[KnowledgeItem]:
    items: list[KnowledgeItem] = []
    asked: str | None = None
    for message in turns:
        text = _THINK.sub("", message.text()).strip()
        if not text:
            continue
        if message.role == "user":
            if asked is not None:
                items.append(_turn(asked, render("context/conversation_no_reply")))
            asked = text
        else:
            items.append(_turn(asked or render("context/conversation_unasked"), text))
            asked = None
    if asked is not None:
        items.append(_turn(asked, render("context/conversation_no_reply")))
    return items


def _turn(asked: str, replied: str) -> KnowledgeItem:
    return KnowledgeItem(
        question=render("context/conversation_turn", asked=asked),
        answer=replied,
        type="qa",
        pinned=True,
    )


# Each research knob and the configuration key it sets (the flag's: docs/configuration.md, "Research
# options"). `max_completion_tokens` also sets agent.budget (see request_budget).
KNOB_KEYS: dict[str, str] = {
    "budget_tokens": "agent.budget",
    "team_size": "agent.team_size",
    "max_annotations": "agent.max_references",
    "language_code": "agent.language",
    "boost_hostnames": "agent.boost_hostnames",
    "bad_hostnames": "agent.bad_hostnames",
    "only_hostnames": "agent.only_hostnames",
    "max_cost": "agent.max_cost",
}


def request_budget(request: ChatRequest, default: int, max_budget: int) -> tuple[int, str]:
    """The run's token budget and the knob it came from ("" for the server's own):
    the knobs' precedence, never above `max_budget`."""
    if request.budget_tokens is not None:
        wanted, knob = request.budget_tokens, "budget_tokens"
    elif request.max_completion_tokens is not None:
        wanted, knob = request.max_completion_tokens, "max_completion_tokens"
    elif request.reasoning_effort is not None:
        wanted, knob = EFFORT_BUDGETS[request.reasoning_effort], "reasoning_effort"
    else:
        wanted, knob = default, ""
    return min(wanted, max_budget), knob


def request_overrides(request: ChatRequest) -> dict[str, Any]:
    """The request's knobs as configuration keys (the budget apart), preset first so
    that the request's own knobs win over it."""
    values: dict[str, Any] = {}
    if request.reasoning_effort is not None:  # the preset's behaviour, as `--effort`
        preset = EFFORT_PRESETS[request.reasoning_effort]
        values.update({f"agent.{key}": getattr(preset, key) for key in PRESET_KEYS})
    if request.max_completion_tokens is not None:  # node-DeepResearch: one attempt
        values["agent.max_bad_attempts"] = 1
    if request.no_direct_answer:
        values["agent.direct_answer"] = False
    for knob, key in KNOB_KEYS.items():
        if knob != "budget_tokens" and getattr(request, knob) is not None:
            values[key] = getattr(request, knob)
    return values


def run_settings(base: Settings, request: ChatRequest, max_budget: int) -> Settings:
    """The server's settings with this request's knobs applied by the flags' override
    path (config.with_overrides), so a request can do nothing a flag could not; a bad
    value is a RequestError naming the knob, worded as the flag's error is."""
    values = request_overrides(request)
    budget, budget_knob = request_budget(request, base.agent.token_budget, max_budget)
    values["agent.budget"] = budget
    labels = {key: knob for knob, key in KNOB_KEYS.items()}
    labels["agent.budget"] = budget_knob or "budget_tokens"
    ceiling = base.agent.max_cost
    if request.max_cost is not None and ceiling is not None:  # never above the server's
        values["agent.max_cost"] = min(request.max_cost, ceiling)
    try:
        return with_overrides(base, values, labels)
    except ConfigError as exc:
        knob = str(exc).split(":", 1)[0]
        raise RequestError(str(exc), knob if hasattr(request, knob) else None) from None
