"""coding: the LLM writes Python for a stated problem; it runs in the sandbox.

A program the run has already run (the same code up to layout and comments, and the
same `data` if it reads it) is not run again: its earlier result comes back, and
nothing is added to the knowledge (it counts as nothing new, agent/progress.py)."""

from __future__ import annotations

import ast
import hashlib
import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from deepsearch.agent.deps import AgentDeps
from deepsearch.agent.outcomes import Continue, Unavailable
from deepsearch.agent.schema import CodingPayload
from deepsearch.agent.state import AgentState
from deepsearch.agent.step import StepContext
from deepsearch.agent.types import KnowledgeItem
from deepsearch.agent.wording import knowledge_question
from deepsearch.errors import SandboxUnavailable, StructuredOutputError
from deepsearch.llm.base import Message
from deepsearch.prompts import render

if TYPE_CHECKING:  # the sandbox module loads only when a run builds one
    from deepsearch.sandbox.runner import SandboxResult

MAX_ATTEMPTS = 3


class CodeReply(BaseModel):
    think: str = Field("", max_length=400)
    code: str = Field(max_length=8000)


def sandbox_data(state: AgentState) -> dict[str, Any]:
    """What the code may read: the knowledge and the URL pool, as plain JSON."""
    return {
        "question": state.question,
        "knowledge": [
            {
                "question": k.question,
                "answer": k.answer[:4000],
                "type": k.type,
                "references": k.references,
            }
            for k in state.knowledge
        ],
        "urls": [
            {"url": r.url, "title": r.title, "snippet": r.snippet}
            for r in list(state.url_pool.values())[:50]
        ],
    }


def describe_shape(data: dict[str, Any]) -> str:
    sample = {
        "question": data["question"][:80],
        "knowledge": data["knowledge"][:1]
        and [{k: str(v)[:60] for k, v in data["knowledge"][0].items()}],
        "urls": data["urls"][:1],
    }
    return render(
        "coder_data_shape",
        sample=json.dumps(sample, ensure_ascii=False)[:1200],
        knowledge_count=len(data["knowledge"]),
        url_count=len(data["urls"]),
    )


def _previous(attempts: list[tuple[str, str]]) -> str:
    return "".join(
        "\n" + render("coder_attempt", number=i + 1, code=code, error=err) + "\n"
        for i, (code, err) in enumerate(attempts)
    )


async def _write_code(
    deps: AgentDeps, problem: str, shape: str, attempts: list[tuple[str, str]]
) -> str | None:
    """The coder's next program, shown the earlier failures; None (and a noted
    failure) when the model gave no usable reply."""
    system = render("coder", problem=problem, data_shape=shape, previous=_previous(attempts))
    try:
        reply = await deps.llm.generate_object(
            "coder", CodeReply, system, [Message(role="user", content=problem)]
        )
    except StructuredOutputError as exc:
        attempts.append(("", f"no usable code was written: {str(exc)[:200]}"))
        return None
    return reply.value.code


def program_key(code: str, data: dict[str, Any]) -> str:
    """The program's identity: its syntax tree (layout and comments do not count),
    plus the data it was given when it reads `data` (the same code over what was
    gathered since may compute something else)."""
    try:
        tree = ast.parse(code)
        text = ast.dump(tree)
        reads_data = any(isinstance(n, ast.Name) and n.id == "data" for n in ast.walk(tree))
    except (SyntaxError, ValueError):  # unparsable: the text, whitespace folded
        text, reads_data = " ".join(code.split()), "data" in code
    if reads_data:
        text += json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def _repeated(state: AgentState, problem: str, output: str) -> Continue:
    state.note("computed_again", problem=problem, output=output)
    return Continue(f"same program as before, not re-run: {output[:120]}")


def _keep_result(state: AgentState, problem: str, result: SandboxResult) -> Continue:
    output = result.result if result.result is not None else result.stdout
    state.add_knowledge(
        KnowledgeItem(
            question=knowledge_question("computation", problem=problem),
            answer=(output or "(no output)")[:4000],
            type="coding",
        )
    )
    state.note("computed", problem=problem, output=str(output))
    return Continue(f"ok: {str(output)[:120]}")


async def handle_coding(payload: CodingPayload, ctx: StepContext) -> Continue | Unavailable:
    """Unavailable when the sandbox cannot run code at all: the run stops offering it."""
    state, deps = ctx.state, ctx.deps
    sandbox = deps.sandbox
    if sandbox is None:
        state.note("no_sandbox")
        return Unavailable("coding", "no sandbox")
    usable, reason = sandbox.availability()
    if not usable:  # refuse before paying for code that could not run
        state.note("coding_refused", reason=reason)
        return Unavailable("coding", reason)
    data = sandbox_data(state)
    shape = describe_shape(data)
    attempts: list[tuple[str, str]] = []
    for _ in range(MAX_ATTEMPTS):
        code = await _write_code(deps, payload.problem, shape, attempts)
        if code is None:
            continue
        key = program_key(code, data)
        if key in state.program_results:
            return _repeated(state, payload.problem, state.program_results[key])
        try:
            result = await sandbox.run(code, data)
        except SandboxUnavailable as exc:
            state.note("coding_refused", reason=str(exc))
            return Unavailable("coding", str(exc))
        if result.ok:
            outcome = _keep_result(state, payload.problem, result)
            state.program_results[key] = state.knowledge[-1].answer
            return outcome
        attempts.append((code, (result.error or result.stderr or "failed")[:500]))
    state.note(
        "computation_failed", problem=payload.problem, attempts=MAX_ATTEMPTS, error=attempts[-1][1]
    )
    return Continue(f"failed after {MAX_ATTEMPTS} attempts")
