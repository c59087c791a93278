"""A reply's nulls are dropped against the schema with its `$ref`s inlined; the inlining
walks and copies the whole schema, so it is done once per schema class, not once per
reply (it was ~45 µs of every validated reply)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from deepsearch.llm import client as client_module
from tests.fakes.scripted_llm import scripted_client
from tests.llm.helpers import ASK


class Note(BaseModel):
    text: str = "none"


class Card(BaseModel):
    note: Note  # a $ref: the nested null below is found only through the inlined schema
    tag: str = "plain"


async def test_the_schema_is_inlined_once_for_every_reply_and_nulls_mean_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inlined: list[dict[str, Any]] = []
    real = client_module.inline_refs_lenient

    def counted(schema: dict[str, Any]) -> dict[str, Any]:
        inlined.append(schema)
        return real(schema)

    monkeypatch.setattr(client_module, "inline_refs_lenient", counted)
    client_module.reply_schema_of.cache_clear()
    client, _ = scripted_client(lambda req: '{"note": {"text": null}, "tag": null}')
    for _ in range(3):
        result = await client.generate_object("agent", Card, "s", ASK)
        # Strict mode's nulls for optional fields are the defaults, one level down too.
        assert result.value == Card(note=Note(text="none"), tag="plain")
        assert result.attempts == 1
    assert len(inlined) == 1
