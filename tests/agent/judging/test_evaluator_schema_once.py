"""The concurrent-checks fit measures each check's JSON schema from the same cache the
LLM client sends (issue 21: a schema generated once a run, not once per use)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from deepsearch.agent.judging.evaluator import FreshnessEval
from deepsearch.agent.steps.evaluator import Evaluator
from deepsearch.llm.base import Message
from deepsearch.llm.client import json_schema_of
from tests.fakes.scripted_llm import scripted_client


def test_the_fit_check_reuses_the_cached_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = json.dumps(FreshnessEval.model_json_schema())
    json_schema_of(FreshnessEval)  # cached, as generate_object leaves it
    calls: list[int] = []
    original = FreshnessEval.model_json_schema

    def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(FreshnessEval, "model_json_schema", counted)
    client, _ = scripted_client(lambda *_: {"think": "ok", "pass": True})
    check = (FreshnessEval, "system", [Message(role="user", content="question")])
    assert Evaluator(client)._fits_at_once([check, check])
    assert calls == []  # measured from the cache, never regenerated
    assert json.dumps(json_schema_of(FreshnessEval)) == expected  # the same bytes
