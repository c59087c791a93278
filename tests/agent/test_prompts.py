"""Prompts are files; the actions a prompt describes are exactly the schema's."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime

import pytest

from deepsearch.agent.context import build_system_prompt
from deepsearch.agent.schema import ACTION_ORDER, AllowFlags, step_schema
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import ScoredUrl
from deepsearch.prompts import PromptError, render, template_variables
from deepsearch.resources import prompts_dir

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_every_prompt_file_is_a_valid_template() -> None:
    names = sorted(
        str(p.relative_to(prompts_dir()).with_suffix("")) for p in prompts_dir().rglob("*.md")
    )
    assert "agent" in names and "actions/answer" in names
    for name in names:
        variables = template_variables(name)
        render(name, **{v: f"<{v}>" for v in variables})  # renders with exactly its variables


def test_rendering_fails_loudly_on_missing_or_unknown_variables() -> None:
    with pytest.raises(PromptError):
        render("actions/answer", language="English")  # `requirements` missing
    with pytest.raises(PromptError):
        render("actions/search", surprise="x")


@pytest.mark.parametrize(
    "allowed",
    [c for n in range(1, 6) for c in itertools.combinations(ACTION_ORDER, n)],
)
def test_prompt_actions_match_the_schema(allowed: tuple[str, ...]) -> None:
    state = AgentState.start("Q?")
    state.step = 2
    state.shown_urls = [ScoredUrl(index=1, url="https://a.org/", title="A", snippet="s", score=1)]
    flags = AllowFlags().only(*allowed)
    prompt = build_system_prompt(
        state, flags, now=NOW, language="English", knowledge_allowance=1000
    )
    in_prompt = set(re.findall(r"<action-(\w+)>", prompt))
    schema = step_schema(flags.allowed()).model_json_schema()["properties"]
    action = schema["action"]
    in_schema = set(action.get("enum") or [action["const"]])
    assert in_prompt == in_schema == set(allowed)
    assert set(schema) - {"think", "action"} == set(allowed)
