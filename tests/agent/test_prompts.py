"""Prompts are files; the actions a prompt describes are exactly the schema's."""

from __future__ import annotations

import ast
import itertools
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

import deepsearch
from deepsearch.agent import limits
from deepsearch.agent.context import build_system_prompt, render_actions
from deepsearch.agent.retrieval.similarity import LexicalSimilarity
from deepsearch.agent.schema import ACTION_ORDER, AllowFlags, allowed_actions, step_schema
from deepsearch.agent.state import AgentState
from deepsearch.agent.steps.rewrite import make_query_rewriter
from deepsearch.agent.types import ScoredUrl
from deepsearch.errors import StructuredOutputError
from deepsearch.llm.base import Completion, CompletionRequest, Message
from deepsearch.llm.client import json_schema_of
from deepsearch.prompts import PromptError, render, template_variables
from deepsearch.resources import prompts_dir
from tests.fakes.scripted_llm import offline_settings, scripted_client

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
    prompt, omitted = build_system_prompt(
        state, flags, now=NOW, language="English", knowledge_allowance=1000
    )
    assert omitted == 0
    in_prompt = set(re.findall(r"<action-(\w+)>", prompt))
    schema = json_schema_of(step_schema(flags.allowed()))  # what the client sends, once
    in_schema = set(allowed_actions(schema))
    assert in_prompt == in_schema == set(allowed)
    assert set(schema["properties"]) == {"think", "action"}


# --------------------------------------------------- every template is used, fully


def _render_calls() -> list[tuple[str, str | None, set[str], bool]]:
    """Every call of deepsearch.prompts.render in the package, read from the source:
    (where, template name if literal, keyword names, has a ** splat)."""
    calls = []
    package = Path(deepsearch.__file__).parent
    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if "deepsearch.prompts" not in source:
            continue  # no `from deepsearch.prompts import ...`: no call to find (no parse)
        tree = ast.parse(source)
        names = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "deepsearch.prompts"
            for alias in node.names
            if alias.name == "render"
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id not in names:
                    continue
                first = node.args[0] if node.args else None
                literal = first.value if isinstance(first, ast.Constant) else None
                keywords = {k.arg for k in node.keywords if k.arg is not None}
                splat = any(k.arg is None for k in node.keywords)
                calls.append(
                    (f"{path.relative_to(package)}:{node.lineno}", literal, keywords, splat)
                )
    return calls


def _template_names() -> list[str]:
    root = prompts_dir()
    names = sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.md"))
    # Diary lines have their own writer and test (the state's diary), not render() calls.
    return [n for n in names if not n.startswith("diary")]


def test_every_template_is_rendered_by_the_code_with_exactly_its_variables() -> None:
    calls = _render_calls()
    assert len(calls) > 30, "the scan must see the package's render calls"
    used: set[str] = set()
    for where, name, keywords, splat in calls:
        if name is None:
            continue  # a computed name: checked at run time by render() itself
        assert not splat, f"{where}: pass {name!r}'s variables by name, not **"
        assert (prompts_dir() / f"{name}.md").is_file(), f"{where}: no template {name!r}"
        assert keywords == template_variables(name), f"{where}: {name!r} variables differ"
        used.add(name)
    unused = sorted(set(_template_names()) - used)
    assert not unused, f"templates no code renders: {unused}"


# ------------------------------------------------------ limits come from one table

# A number the model is told as a limit ("up to 5", "at most 2") must be a variable.
_LITERAL_LIMIT = re.compile(r"\b(?:up to|at most|no more than|maximum of)\s+\d", re.IGNORECASE)
# Also patched in a fresh interpreter, before the schema modules are imported: the
# schema's bounds and descriptions follow the table too (tests/test_fresh_process.py).
PATCHED = {"MAX_QUERIES": 7, "MAX_VISITS": 8, "MAX_SUBQUESTIONS": 3, "MAX_REWRITES": 9}


def test_no_template_states_a_limit_literally() -> None:
    for name in _template_names():
        text = (prompts_dir() / f"{name}.md").read_text(encoding="utf-8")
        assert not _LITERAL_LIMIT.search(text), f"prompts/{name}.md hard-codes a limit"


def test_the_patched_values_cover_the_whole_table() -> None:
    assert set(PATCHED) == {k for k in vars(limits) if k.startswith("MAX_")}
    # Distinct, and unlike any real value: a limit read from the wrong constant shows.
    assert len(set(PATCHED.values())) == len(PATCHED)
    assert not set(PATCHED.values()) & {vars(limits)[k] for k in PATCHED}


async def test_rendered_prompts_state_the_table_s_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in PATCHED.items():
        monkeypatch.setattr(limits, name, value)
    state = AgentState.start("Q?")
    state.shown_urls = [ScoredUrl(index=1, url="https://a.org/", title="A", snippet="s", score=1)]
    prompt = render_actions(state, AllowFlags(), language="English", beast=False)
    assert "run up to 7 web queries" in prompt
    assert "Give up to 8 indices" in prompt
    assert "name up to 3 sub-questions" in prompt
    client, provider = scripted_client(lambda req: {"queries": []})
    rewrite = make_query_rewriter(client, LexicalSimilarity())
    await rewrite("Q?", ["q"], [], False)
    assert "At most 9 short keyword queries" in provider.calls[0].system


# ----------------------------------------------------- the client's retry prompts


class _Short(BaseModel):
    count: int = Field(ge=0)


async def test_the_retry_message_is_the_template_and_nudges_only_when_cut_off() -> None:
    replies = iter(['{"count": -1}', '{"count": 1}'])
    client, provider = scripted_client(lambda req: next(replies))
    await client.generate_object("agent", _Short, "s", [Message(role="user", content="?")])
    retry = provider.calls[1].messages[-1].content
    nudge = render("llm/retry_cut_off")
    assert retry.startswith("That reply was not valid: count: ")
    assert retry.endswith("\nReply again with only one JSON object that matches the schema.")
    assert nudge not in retry
    cut = iter([Completion(text='{"count": -1}', finish_reason="length"), '{"count": 1}'])
    client, provider = scripted_client(lambda req: next(cut))
    await client.generate_object("agent", _Short, "s", [Message(role="user", content="?")])
    assert f"\n{nudge}\nReply again" in provider.calls[1].messages[-1].content
    truncated = iter([Completion(text='{"count": ', finish_reason="length"), '{"count": 1}'])
    client, provider = scripted_client(lambda req: next(truncated))
    await client.generate_object("agent", _Short, "s", [Message(role="user", content="?")])
    problem = render("llm/problem_cut_off")
    assert provider.calls[1].messages[-1].content == render(
        "llm/retry", problem=problem, cut_off=nudge + "\n"
    )


async def test_the_fallback_extracts_with_its_template() -> None:
    def reply(req: CompletionRequest) -> str:
        return '{"count": 2}' if req.tool == "fallback" else ""

    other = offline_settings(**{"llm.providers.openai.tools.fallback.model": "gpt-4o"})
    client, provider = scripted_client(reply, settings=other)
    with pytest.raises(StructuredOutputError):  # "" twice: no fallback, the same reply
        await client.generate_object("agent", _Short, "s", [Message(role="user", content="?")])
    replies = iter(["", " "])

    def reply_twice(req: CompletionRequest) -> str:
        return '{"count": 2}' if req.tool == "fallback" else next(replies)

    client, provider = scripted_client(reply_twice, settings=other)
    await client.generate_object("agent", _Short, "s", [Message(role="user", content="?")])
    fallback = provider.calls_for("fallback")[0]
    assert fallback.system == render("llm/fallback")
    assert fallback.messages[0].content == render("llm/empty_reply") == "(empty reply)"
