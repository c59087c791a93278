"""Whole research runs against servers nobody here wrote, through the real CLI and SDK.

The llama-cpp-python-like fake answers json_schema with its HTTP 500 and honours
`{"type": "json_object", "schema": S}`; its model is weak (null wherever the schema it
was sent allows null: tests/fakes/weak_model.py). Its runs must answer as the same
script does against the OpenAI-like fake, meeting the 500 at most once per run, and
the next run must start on the remembered rung. Against the OpenAI-strict fake every
call still goes out strict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    SEARCH,
    VISIT,
    router,
    run_in_process,
    search,  # noqa: F401 - fixture
    web,  # noqa: F401 - fixture
)
from tests.fakes.local_servers import FakeLlamaCppPythonServer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers


def schema_named(schema: dict[str, Any] | None) -> str | None:
    """Which project schema a wire schema is (a json_object request carries no name)."""
    if schema is None:
        return None
    props = set(schema.get("properties", {}))
    if props == {"think", "action"}:
        return "AgentStep"
    for name, marker in (
        ("QuestionEval", "needs_definitive"),
        ("StrictEval", "improvement_plan"),
        ("ErrorAnalysis", "recap"),
        ("RewriteReply", "queries"),
        ("DefinitiveEval", "pass"),
    ):
        if marker in props:
            return name
    raise AssertionError(f"unknown schema {sorted(props)}")


def named(route: Any) -> Any:
    """`route` (which reads the json_schema name) behind a server that gets no name."""

    def handler(body: dict[str, Any]) -> Any:
        fmt = body.get("response_format") or {}
        schema = fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema")
        name = schema_named(schema) if fmt else None
        rf = {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
        return route({**body, "response_format": rf if name else None})

    return handler


def outcome(done: Any) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    return {
        "status": out["status"],
        "answer": out["answer"],
        "steps": [s["action"] for s in out["steps"]],
        "references": [r["url"] for r in out["references"]],
    }


def test_a_weak_model_on_llama_cpp_python_answers_as_on_openai(
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    script = [SEARCH, VISIT, ANSWER_STEP]
    with FakeOpenAIServer(router(script)) as openai_like:
        expected = outcome(run_in_process(openai_like, search, "--quiet", tmp=tmp_path / "o"))
    with FakeLlamaCppPythonServer(handler=named(router(script))) as llama:
        first = outcome(run_in_process(llama, search, "--quiet", tmp=tmp_path / "l"))
        assert llama.refused_posts == 1  # the 500, once per run, no SDK retries
        posts = len(llama.chat_requests)
        llama.handler = named(router(script))
        second = outcome(run_in_process(llama, search, "--quiet", tmp=tmp_path / "l"))
        assert llama.refused_posts == 1, "the second run starts on the remembered rung"
        assert len(llama.chat_requests) == 2 * posts - 1
    assert first == second == expected and expected["status"] == "answered"
    assert llama.grammar_schemas, "every structured reply was made under a grammar"
    memory = json.loads((tmp_path / "l" / "cache" / "output-modes.json").read_text("utf-8"))
    assert {v["mode"] for v in memory.values()} == {"json_object_schema"}


def test_the_openai_strict_fake_gets_every_call_strict(
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
    monkeypatch: Any,
) -> None:
    from deepsearch.llm import openai_provider

    # The fake stands for OpenAI's own API: its host is the one the provider trusts.
    monkeypatch.setattr(openai_provider, "_OFFICIAL_HOSTS", ("127.0.0.1",))
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        assert outcome(run_in_process(llm, search, "--quiet", tmp=tmp_path))["status"] == "answered"
    formats = [(r.body or {}).get("response_format") for r in llm.chat_requests]
    structured = [f for f in formats if f is not None]
    assert structured and all(f["type"] == "json_schema" for f in structured)
    assert all(f["json_schema"]["strict"] is True for f in structured)
    assert llm.schema_rejections == []
