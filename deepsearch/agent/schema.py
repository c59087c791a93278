"""The per-step action schema, built from the same allow-flags as the prompt.

`think` + `action` (a Literal of the allowed actions) + one optional payload per
allowed action. A model validator requires the chosen action's payload, so a reply
that picks "search" without queries is a validation error the client can feed back.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, create_model, model_validator

from deepsearch.agent.limits import MAX_QUERIES, MAX_SUBQUESTIONS, MAX_VISITS

ActionName = Literal["search", "visit", "reflect", "answer", "coding"]
ACTION_ORDER: tuple[ActionName, ...] = ("search", "visit", "reflect", "answer", "coding")


class SearchPayload(BaseModel):
    action: ClassVar[ActionName] = "search"
    queries: list[str] = Field(
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
    questions: list[str] = Field(
        max_length=MAX_SUBQUESTIONS, description=f"up to {MAX_SUBQUESTIONS} new sub-questions"
    )


class AnswerPayload(BaseModel):
    action: ClassVar[ActionName] = "answer"
    answer: str = Field(
        description="the complete answer, in markdown; when supported is false: what you "
        "looked for and what you found instead"
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
    problem: str = Field(description="a precise statement of the computation to run")


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
    think: str = Field(max_length=600, description="brief reasoning for this choice")
    action: str

    @model_validator(mode="after")
    def _payload_matches_action(self) -> StepBase:
        if getattr(self, self.action, None) is None:
            raise ValueError(f'action is "{self.action}" but the "{self.action}" field is missing')
        return self

    def payload(self) -> ActionPayload:
        """The chosen action's payload (the validator guarantees it is present)."""
        payload: ActionPayload = getattr(self, self.action)
        return payload


@cache
def step_schema(allowed: tuple[ActionName, ...]) -> type[StepBase]:
    """A pydantic model accepting exactly the allowed actions (cached per combination)."""
    if not allowed:
        raise ValueError("at least one action must be allowed")
    action_type = Literal[allowed]  # type: ignore[valid-type]
    payload_fields: dict[str, Any] = {
        name: (PAYLOADS[name] | None, Field(None, description=f"payload when action is {name}"))
        for name in allowed
    }
    return create_model(
        "AgentStep",
        __base__=StepBase,
        action=(action_type, Field(description="one of: " + ", ".join(allowed))),
        **payload_fields,
    )
