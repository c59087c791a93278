"""The shared structured-output ladder, against a scripted `send` (no SDK, no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepsearch.config import ModelSettings
from deepsearch.errors import ProviderError
from deepsearch.llm.base import Completion, CompletionRequest, Message, OutputMode
from deepsearch.llm.output_modes import ModeRejected, OutputModeLadder, system_for
from deepsearch.llm.rung_memory import RungMemory

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}}
OPENAI_RUNGS: tuple[OutputMode, ...] = ("json_schema", "json_object", "prompted")


def request(schema: dict | None = SCHEMA, model: str = "m1") -> CompletionRequest:
    return CompletionRequest(
        tool="agent",
        settings=ModelSettings(model=model),
        system="be brief",
        messages=[Message(role="user", content="q")],
        json_schema=schema,
    )


class Endpoint:
    """Refuses the listed modes (with an error naming the mode) and records every send."""

    def __init__(self, *refused: OutputMode) -> None:
        self.refused = set(refused)
        self.sent: list[OutputMode] = []

    async def send(self, mode: OutputMode) -> Completion:
        self.sent.append(mode)
        if mode in self.refused:
            raise ModeRejected(ProviderError(f"{mode} refused", provider="fake"))
        return Completion(text="{}", mode=mode)


async def test_free_text_goes_out_in_text_mode_and_is_not_remembered() -> None:
    ladder, endpoint = OutputModeLadder(OPENAI_RUNGS), Endpoint()
    done = await ladder.complete(request(schema=None), endpoint.send)
    assert (done.mode, endpoint.sent, ladder.remembered) == ("text", ["text"], {})


async def test_climbs_past_refused_rungs_and_remembers_per_model() -> None:
    ladder, endpoint = OutputModeLadder(OPENAI_RUNGS), Endpoint("json_schema", "json_object")
    assert (await ladder.complete(request(), endpoint.send)).mode == "prompted"
    assert ladder.remembered == {"m1": "prompted"}
    await ladder.complete(request(), endpoint.send)
    assert endpoint.sent == ["json_schema", "json_object", "prompted", "prompted"]
    await ladder.complete(request(model="m2"), endpoint.send)  # another model climbs again
    assert endpoint.sent[4:] == ["json_schema", "json_object", "prompted"]


async def test_a_remembered_rung_refused_later_raises_its_error_without_climbing() -> None:
    ladder, endpoint = OutputModeLadder(OPENAI_RUNGS), Endpoint()
    await ladder.complete(request(), endpoint.send)
    endpoint.refused = {"json_schema"}
    with pytest.raises(ProviderError, match="json_schema refused"):
        await ladder.complete(request(), endpoint.send)
    assert endpoint.sent == ["json_schema", "json_schema"]


async def test_every_rung_refused_raises_the_last_error() -> None:
    ladder = OutputModeLadder(("json_schema", "json_object"))
    endpoint = Endpoint("json_schema", "json_object")
    with pytest.raises(ProviderError, match="json_object refused"):
        await ladder.complete(request(), endpoint.send)
    assert ladder.remembered == {}


async def test_a_schema_the_dialect_cannot_express_skips_native_rungs_and_marks_nothing() -> None:
    ladder, endpoint = OutputModeLadder(("json_schema", "json_object")), Endpoint()
    done = await ladder.complete(request(), endpoint.send, native=False)
    assert (done.mode, endpoint.sent, ladder.remembered) == ("json_object", ["json_object"], {})
    await ladder.complete(request(), endpoint.send)  # the next schema still goes native
    assert endpoint.sent[-1] == "json_schema"


def test_the_schema_goes_in_the_prompt_exactly_for_the_prompted_rungs() -> None:
    req = request()
    assert system_for(req, "json_schema") == "be brief"
    assert system_for(request(schema=None), "text") == "be brief"
    prompted: tuple[OutputMode, ...] = ("json_object", "prompted")
    for mode in prompted:
        system = system_for(req, mode)
        assert system.startswith("be brief") and '"answer"' in system


def test_a_ladder_must_end_on_a_prompted_rung() -> None:
    with pytest.raises(ValueError, match="last rung"):
        OutputModeLadder(("json_schema",))
    with pytest.raises(ValueError, match="last rung"):
        OutputModeLadder(())


LOCAL_RUNGS: tuple[OutputMode, ...] = (
    "json_schema",
    "json_object_schema",
    "json_object",
    "prompted",
)


async def test_the_rung_is_kept_on_disk_per_server_and_model(tmp_path: Path) -> None:
    path = tmp_path / "output-modes.json"
    first, endpoint = (
        OutputModeLadder(LOCAL_RUNGS, memory=RungMemory(path), server="http://a/v1"),
        Endpoint("json_schema"),
    )
    await first.complete(request(), endpoint.send)
    assert first.why == {"m1": "refuses response_format json_schema"}
    # The next run on the same server starts there; another server climbs from the top.
    again = OutputModeLadder(LOCAL_RUNGS, memory=RungMemory(path), server="http://a/v1")
    other = OutputModeLadder(LOCAL_RUNGS, memory=RungMemory(path), server="http://b/v1")
    endpoint.sent.clear()
    await again.complete(request(), endpoint.send)
    await other.complete(request(), endpoint.send)
    assert endpoint.sent == ["json_object_schema", "json_schema", "json_object_schema"]
    assert again.why["m1"] == "refuses response_format json_schema"  # said by the earlier run


async def test_a_stored_rung_refused_now_climbs_on_from_there(tmp_path: Path) -> None:
    path = tmp_path / "output-modes.json"
    RungMemory(path).put("http://a/v1", "m1", "json_object_schema", "earlier")
    ladder = OutputModeLadder(LOCAL_RUNGS, memory=RungMemory(path), server="http://a/v1")
    endpoint = Endpoint("json_object_schema")  # the server changed since
    assert (await ladder.complete(request(), endpoint.send)).mode == "json_object"
    assert endpoint.sent == ["json_object_schema", "json_object"]
    assert RungMemory(path).get("http://a/v1", "m1").mode == "json_object"  # type: ignore[union-attr]


def test_an_unreadable_memory_is_an_empty_one(tmp_path: Path) -> None:
    path = tmp_path / "output-modes.json"
    path.write_text("{not json", encoding="utf-8")
    assert RungMemory(path).get("http://a/v1", "m1") is None
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    RungMemory(blocker / "output-modes.json").put("s", "m", "json_object", "")  # no raise
