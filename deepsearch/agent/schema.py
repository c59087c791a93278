"""The per-step action schema, built from the same allow-flags as the prompt.

`think` + `action`, where `action` is one of the allowed actions: an object with a
single key, the action's name, holding its payload (`{"search": {"queries": [...]}}`).
It is a union with one branch per allowed action, each requiring its own non-null
payload, so no reply a grammar or OpenAI's strict mode lets through can pick an
action and leave its payload out (the root stays an object, as strict mode wants).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, create_model

from deepsearch.agent.limits import (
    LONGEST_ANSWER,
    LONGEST_PROBLEM,
    LONGEST_QUERY,
    LONGEST_QUESTION,
    MAX_QUERIES,
    MAX_SUBQUESTIONS,
    MAX_VISITS,
)

ActionName = Literal["search", "visit", "reflect", "answer", "coding"]
ACTION_ORDER: tuple[ActionName, ...] = ("search", "visit", "reflect", "answer", "coding")


class SearchPayload(BaseModel):
    action: ClassVar[ActionName] = "search"
    queries: list[Annotated[str, Field(max_length=LONGEST_QUERY)]] = Field(
        max_length=MAX_QUERIES,
        description=f"up to {MAX_QUERIES} short keyword queries, none already run",
    )


class VisitPayload(BaseModel):
    action: ClassVar[ActionName] = "visit"
    url_indices: list[int] = Field(
        max_length=MAX_VISITS, description=f"up to {MAX_VISITS} indices from the numbered URL list"
    )


class ReflectPayload(BaseModel):
    action: ClassVar[ActionName] = "reflect"
    questions: list[Annotated[str, Field(max_length=LONGEST_QUESTION)]] = Field(
        max_length=MAX_SUBQUESTIONS, description=f"up to {MAX_SUBQUESTIONS} new sub-questions"
    )


class AnswerPayload(BaseModel):
    action: ClassVar[ActionName] = "answer"
    answer: str = Field(
        max_length=LONGEST_ANSWER,
        description="the complete answer, in markdown; when supported is false: what you "
        "looked for and what you found instead",
    )
    # Structured, not phrase-matched: "I could not find it" is the model's own statement.
    # Defaults keep older replies readable; strict mode still makes the model state both.
    supported: bool = Field(
        True,
        description="true only if this answer actually answers the question, from the "
        "knowledge gathered (or, for a trivial question, from certain common knowledge); "
        "false if the answer was not found",
    )
    uncertain: bool = Field(
        False,
        description="true if the evidence is thin, indirect or conflicting and the answer "
        "is a best guess",
    )


class CodingPayload(BaseModel):
    action: ClassVar[ActionName] = "coding"
    problem: str = Field(
        max_length=LONGEST_PROBLEM, description="a precise statement of the computation to run"
    )


# The typed action union: a step's payload names its action (`payload.action`).
ActionPayload = SearchPayload | VisitPayload | ReflectPayload | AnswerPayload | CodingPayload
PAYLOADS: dict[ActionName, type[ActionPayload]] = {
    p.action: p for p in (SearchPayload, VisitPayload, ReflectPayload, AnswerPayload, CodingPayload)
}


@dataclass(frozen=True)
class AllowFlags:
    """Which actions the next step may take. The prompt and the schema both read this."""

    search: bool = True
    visit: bool = True
    reflect: bool = True
    answer: bool = True
    coding: bool = True

    def allowed(self) -> tuple[ActionName, ...]:
        return tuple(name for name in ACTION_ORDER if getattr(self, name))

    def only(self, *names: str) -> AllowFlags:
        return AllowFlags(**{f.name: f.name in names for f in fields(self)})


class StepBase(BaseModel):
    # Only a base: never validated itself. Its subclasses (step_schema) inherit this and
    # are built at their first use, their JSON schema's, which comes first anyway.
    model_config = ConfigDict(defer_build=True)

    think: str = Field(max_length=600, description="brief reasoning for this choice")
    # The chosen branch: a one-key object `{name: payload}` (see `step_schema`).
    action: Any

    def payload(self) -> ActionPayload:
        """The chosen action's payload (the union guarantees it is present)."""
        payload: ActionPayload = getattr(self.action, type(self.action).action_name)
        return payload


@cache
def _branch(name: ActionName) -> Any:
    """The union branch of one action: `{name: payload}`, nothing else, payload required.
    One model per action, shared by every step schema that offers it (a run builds
    three or four step schemas; each built its own copy, ~1 ms of CPU a branch)."""
    branch_fields: dict[str, Any] = {
        name: (PAYLOADS[name], Field(description=f"the {name} action's fields"))
    }
    model = create_model(
        f"{name.capitalize()}Action", __config__=ConfigDict(extra="forbid"), **branch_fields
    )
    model.action_name = name  # type: ignore[attr-defined]
    return Annotated[model, Tag(name)]


def _action_key(value: Any) -> str | None:
    """The branch a reply names: the one key of its `action` object."""
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value)))
    if isinstance(value, BaseModel):
        return getattr(type(value), "action_name", None)
    return None


@cache
def step_schema(allowed: tuple[ActionName, ...]) -> type[StepBase]:
    """A pydantic model accepting exactly the allowed actions (cached per combination)."""
    if not allowed:
        raise ValueError("at least one action must be allowed")
    names = ", ".join(allowed)
    branches = tuple(_branch(name) for name in allowed)
    union: Any = Union[branches] if len(branches) > 1 else branches[0]  # noqa: UP007
    action_type = Annotated[
        union,
        Discriminator(
            _action_key,
            custom_error_type="action_choice",
            custom_error_message=f"action must be an object with exactly one key, one of: {names}",
        ),
    ]
    return create_model(
        "AgentStep",
        __base__=StepBase,
        action=(
            action_type,
            Field(description=f"the one action chosen, as {{name: its fields}}; one of: {names}"),
        ),
    )


def allowed_actions(json_schema: dict[str, Any]) -> list[str]:
    """The actions a step schema offers, in order: the project's form (with `$defs`) or
    a wire form (inlined). For fakes and tests that answer what they are offered."""
    spec = json_schema.get("properties", {}).get("action", {})
    defs = json_schema.get("$defs", {})
    names: list[str] = []
    for branch in spec.get("oneOf") or spec.get("anyOf") or [spec]:
        if "$ref" in branch:
            branch = defs.get(branch["$ref"].rsplit("/", 1)[-1], {})
        names += list(branch.get("properties", {}))
    return names
