"""The `research` tool, apart from the SDK: its input and output schemas, the
validation of a call's arguments, the settings they make and the result it returns.

The per-call knobs are rows of the research options table (their types and help
lines come from there, their bounds from the configuration keys they set: one
declaration per option) and reach the settings by the same override path as the
command line's flags, layered over the server's own flags
(deepsearch.library.load_settings), so a bad value gets the flag's message; the
budget is capped by the server's `--max-budget`, the cost limit (`max_cost`) by its
`--max-cost`. Provider, search and network options stay the server's.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from deepsearch.errors import ConfigError
from deepsearch.text import MAX_QUESTION_CHARS as QUESTION_CAP

if TYPE_CHECKING:
    from deepsearch.agent.handover import Carryover
    from deepsearch.agent.result import ResearchResult
    from deepsearch.config import Settings
    from deepsearch.frontend.options import ResearchOption

TOOL_NAME = "research"
# The options a caller may set per call; everything else is the server's.
KNOBS = (
    "effort", "budget", "max_steps", "timeout", "team_size", "language", "max_references",
    "min_confidence", "no_direct_answer", "boost_hostnames", "bad_hostnames", "only_hostnames",
    "max_cost",
    "continue_from",
)  # fmt: skip
MAX_QUESTION_CHARS = QUESTION_CAP  # every front end's one cap (deepsearch.text)
CONTINUE_HELP = (
    'The run_id of an earlier result (or "last"): a follow-up question, researched with '
    "that run's knowledge in hand (nothing it read is fetched again)."
)
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


class ArgumentError(Exception):
    """A bad tool argument: one line naming it."""


class ToolReference(BaseModel):
    url: str
    title: str
    quote: str


class ToolUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    budget: int
    cost_usd: float | None = None  # US dollars; null when a model has no known price
    max_cost: float | None = None


class ToolOutput(BaseModel):
    """The tool's structuredContent (its outputSchema)."""

    answer: str
    status: str
    confidence: float
    references: list[ToolReference]
    usage: ToolUsage
    error: str | None = None
    error_kind: str | None = None
    # The run in the history: a later call's `continue_from` (docs/history.md).
    run_id: str | None = None


def _rows() -> dict[str, ResearchOption]:
    from deepsearch.frontend.options import OPTIONS

    return {row.name: row for row in OPTIONS if row.name in KNOBS}


def input_schema() -> dict[str, Any]:
    from deepsearch.config import EFFORT_PRESETS

    properties: dict[str, Any] = {
        "question": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_QUESTION_CHARS,
            "description": "The question to research; one cited answer comes back.",
        }
    }
    for name, row in _rows().items():
        prop: dict[str, Any] = {"type": _JSON_TYPES[row.kind], "description": row.help}
        prop.update(_schema_bounds(row))
        if name == "effort":
            prop["enum"] = sorted(EFFORT_PRESETS)
        if name == "continue_from":
            prop["description"] = CONTINUE_HELP
        properties[name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": ["question"],
        "additionalProperties": False,
    }


def _schema_bounds(row: ResearchOption) -> dict[str, float]:
    """The key's bounds (config.key_bounds) as JSON Schema keywords."""
    names = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}
    return {names[k]: v for k, v in row.bounds._asdict().items() if v is not None}


@cache
def output_schema() -> dict[str, Any]:
    """ToolOutput's JSON schema, generated once per process (~1 ms each time otherwise,
    for every server built: one per HTTP session). Shared: never mutate it."""
    return ToolOutput.model_json_schema()


def parse_arguments(arguments: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """(question, knobs), or an ArgumentError naming the first bad argument."""
    args = dict(arguments or {})
    question = args.pop("question", None)
    if not isinstance(question, str) or not question.strip():
        raise ArgumentError("question: a non-empty string is required")
    if len(question) > MAX_QUESTION_CHARS:
        raise ArgumentError(f"question: longer than {MAX_QUESTION_CHARS} characters")
    rows = _rows()
    for name, value in args.items():
        row = rows.get(name)
        if row is None:
            raise ArgumentError(f"{name}: unknown argument (known: question, {', '.join(KNOBS)})")
        _check(row, value)
    return " ".join(question.split()), args


def _check(row: ResearchOption, value: Any) -> None:
    """The JSON type only: bounds are the configuration's, checked by call_settings
    with the message a flag gets."""
    numeric = row.kind in (int, float) and not isinstance(value, bool)
    ok = isinstance(value, (int, float) if row.kind is float else row.kind) and (
        numeric or row.kind not in (int, float)
    )
    if not ok:
        raise ArgumentError(f"{row.name}: must be {_JSON_TYPES[row.kind]}")


def call_settings(base: Mapping[str, Any], knobs: Mapping[str, Any], max_budget: int) -> Settings:
    """The server's options with this call's knobs over them, as configuration (a
    ConfigError names the argument), the budget capped at `max_budget`."""
    from deepsearch.library import load_settings

    labels = {row.config_key: row.name for row in _rows().values() if row.config_key}
    settings = load_settings({**base, **knobs}, labels=labels)
    if settings.agent.token_budget > max_budget:
        agent = settings.agent.model_copy(update={"budget": max_budget})
        settings = settings.model_copy(update={"agent": agent})
    if knobs.get("max_cost") is not None:  # never above the server's own cost limit
        ceiling, asked = load_settings(base).agent.max_cost, settings.agent.max_cost
        if ceiling is not None and asked is not None and asked > ceiling:
            agent = settings.agent.model_copy(update={"max_cost": ceiling})
            settings = settings.model_copy(update={"agent": agent})
    return settings


def is_error(result: ResearchResult) -> bool:
    """As serve's: no answer, or a run that could not go on (the partial answer goes
    with the error)."""
    from deepsearch.server.stream import failed

    return failed(result)


def output(result: ResearchResult) -> ToolOutput:
    usage = result.usage
    return ToolOutput(
        answer=result.answer,
        status=result.status,
        confidence=result.confidence,
        references=[
            ToolReference(url=ref.url, title=ref.title, quote=ref.quote)
            for ref in result.references
        ],
        usage=ToolUsage(
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
            budget=usage.budget,
            cost_usd=usage.cost_usd,
            max_cost=usage.max_cost,
        ),
        error=result.error,
        error_kind=result.error_kind,
        run_id=result.run_id,
    )


def earlier(settings: Settings, knobs: Mapping[str, Any]) -> Carryover | None:
    """`continue_from`: the run of the history this call follows up (a run not there
    is a DeepsearchError, answered as an error result)."""
    wanted = knobs.get("continue_from")
    if not wanted:
        return None
    from deepsearch.history import earlier_run

    return earlier_run(settings, None if wanted == "last" else wanted)


def text(result: ResearchResult) -> str:
    """The answer with its numbered references (the finalizer's `[^n]:` lines, or a
    list when the answer carries none); an error leads with its one line."""
    body = result.answer
    if result.references and "[^1]:" not in body:
        listed = (
            f"[^{i}]: {ref.title or ref.url} — {ref.url}"
            for i, ref in enumerate(result.references, start=1)
        )
        body = body.rstrip() + "\n\n" + "\n".join(listed)
    if is_error(result):
        head = f"error: {result.error or 'no answer was found'}"
        return f"{head}\n\n{body}" if body else head
    return body


def config_message(exc: ConfigError) -> str:
    return f"error: {exc}"
