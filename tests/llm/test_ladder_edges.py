"""The structured-output ladder's edges and the checks around it: concurrent first calls
meet a refusal once, the json_object + schema rung carries the schema in its prompt,
the rung memory never stores a password, a 5xx naming the request's field is a refused
rung (and a crash's "schema" an outage), the reply checks (a NaN inside a list, JSON
nested past Python's recursion limit), the grammar dialect's string cap (README: "at
most 1,000") and `allOf`. Scripted sends, no server."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from deepsearch.errors import ProviderError
from deepsearch.llm.base import Completion, OutputMode
from deepsearch.llm.output_modes import ModeRejected, OutputModeLadder, system_for
from deepsearch.llm.refusals import names_structured_output
from deepsearch.llm.reply_checks import (
    data_path,
    has_non_finite,
    is_complete_json,
    summarize,
    trim_to_limits,
)
from deepsearch.llm.rung_memory import RungMemory
from deepsearch.llm.schema_dialects import (
    GEMINI,
    GRAMMAR,
    OPENAI_STRICT,
    UnsupportedSchema,
    to_dialect,
)
from tests.llm.test_output_modes import LOCAL_RUNGS, request


class _SlowRefusal:
    """Refuses json_schema after yielding to the loop: concurrent calls overlap."""

    def __init__(self) -> None:
        self.sent: list[OutputMode] = []

    async def send(self, mode: OutputMode) -> Completion:
        self.sent.append(mode)
        await asyncio.sleep(0)
        if mode == "json_schema":
            raise ModeRejected(ProviderError("json_schema refused", provider="fake"), 400)
        return Completion(text="{}", mode=mode)


async def test_concurrent_first_calls_meet_a_refusal_once() -> None:
    ladder, endpoint = OutputModeLadder(LOCAL_RUNGS), _SlowRefusal()
    done = await asyncio.gather(*(ladder.complete(request(), endpoint.send) for _ in range(4)))
    assert [c.mode for c in done] == ["json_object_schema"] * 4
    assert endpoint.sent.count("json_schema") == 1
    assert ladder.why == {"m1": "refuses response_format json_schema (HTTP 400)"}


def test_the_json_object_schema_rung_carries_the_schema_in_its_prompt() -> None:
    system = system_for(request(), "json_object_schema")
    assert system.startswith("be brief") and '"answer"' in system
    assert system_for(request(), "json_schema") == "be brief"


def test_the_rung_memory_never_stores_the_servers_password(tmp_path: Path) -> None:
    path = tmp_path / "output-modes.json"
    server = "http://user:hunter2-secret@gpu-box.local:8000/v1/"
    RungMemory(path).put(server, "m1", "json_object", "refuses response_format json_schema")
    text = path.read_text("utf-8")
    assert "hunter2-secret" not in text
    kept = json.loads(text)
    assert list(kept) == ["http://user:****@gpu-box.local:8000/v1 m1"]
    entry = kept["http://user:****@gpu-box.local:8000/v1 m1"]
    assert (entry["mode"], entry["why"]) == ("json_object", "refuses response_format json_schema")
    again = RungMemory(path).get(server, "m1")  # the same key from the same URL
    assert again is not None and again.mode == "json_object"
    assert RungMemory(None).get(server, "m1") is None
    RungMemory(None).put(server, "m1", "json_object", "")  # no file, no error


def test_putting_the_same_rung_again_does_not_rewrite_the_file(tmp_path: Path) -> None:
    path = tmp_path / "output-modes.json"
    memory = RungMemory(path)
    memory.put("http://a/v1", "m1", "json_object", "why")
    path.write_text("{}", "utf-8")  # changed behind its back
    memory.put("http://a/v1", "m1", "json_object", "why")
    assert path.read_text("utf-8") == "{}"
    memory.put("http://a/v1", "m1", "prompted", "why")
    assert "prompted" in path.read_text("utf-8")


@pytest.mark.parametrize(
    ("body", "status", "refused"),
    [
        ("'response_format' of type json_object is not supported", 500, True),
        ("Error in json_schema: unsupported", 500, True),
        ("json_object is not allowed here", 503, True),
        ("Traceback ... in build_schema: KeyError", 500, False),  # a crash: an outage
        ("strict mode failed", 502, False),
        ("Invalid schema for response_format", 400, True),
        ("strict is not allowed", 400, True),
        ("STRUCTURED OUTPUT unavailable", None, True),
        ("this model does not support that", 422, False),
        ("feature not supported", 400, True),
        ("Unsupported parameter", 400, True),
        ("rate limited", 429, False),
    ],
)
def test_a_refused_mode_is_told_from_an_outage(
    body: str, status: int | None, refused: bool
) -> None:
    assert names_structured_output(body, status=status) is refused


def test_a_non_finite_number_anywhere_fails_the_reply_check() -> None:
    assert has_non_finite([1.0, math.nan])
    assert has_non_finite({"a": [{"b": math.inf}]})
    assert has_non_finite(-math.inf)
    assert not has_non_finite({"a": [1.0, 2, "nan", None, True]})


def test_json_nested_past_the_recursion_limit_is_incomplete_not_an_error() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert is_complete_json(deep) is False
    assert is_complete_json('{"a": [1, 2]}') is True
    assert is_complete_json('{"a": [1, 2') is False


class _Limited(BaseModel):
    title: str = Field(max_length=12)
    tags: list[str] = Field(max_length=2)
    n: int = 0


def test_over_long_strings_and_lists_are_trimmed_other_errors_kept() -> None:
    value = {"title": "one two three four", "tags": ["a", "b", "c"], "n": "x"}
    with pytest.raises(ValidationError) as caught:
        _Limited.model_validate(value)
    fixed = trim_to_limits(value, caught.value)
    assert fixed == {"title": "one two", "tags": ["a", "b"], "n": "x"}
    assert value["tags"] == ["a", "b", "c"]  # the original untouched
    assert "n: Input should be a valid integer" in summarize(caught.value)
    with pytest.raises(ValidationError) as other:
        _Limited.model_validate({"title": "t", "tags": [], "n": "x"})
    untouched = {"title": "t", "tags": [], "n": "x"}
    assert trim_to_limits(untouched, other.value) is untouched


def test_a_union_tag_in_an_error_location_is_skipped() -> None:
    data = {"action": {"search": {"queries": ["q"]}}}
    assert data_path(data, ("action", "search", "search", "queries", 0)) == [
        "action",
        "search",
        "queries",
        0,
    ]


def test_the_grammar_dialect_caps_a_max_length_at_1000() -> None:
    schema = {
        "type": "object",
        "properties": {
            "long": {"type": "string", "maxLength": 5000},
            "short": {"type": "string", "maxLength": 20},
        },
    }
    converted = to_dialect(schema, GRAMMAR)["properties"]
    assert converted["long"]["maxLength"] == 1000
    assert converted["short"]["maxLength"] == 20


def _obj(**props: object) -> dict[str, object]:
    return {"type": "object", "properties": props}


@pytest.mark.parametrize("dialect", [OPENAI_STRICT, GEMINI, GRAMMAR])
def test_allof_of_one_branch_is_merged_of_two_refused(dialect: object) -> None:
    one = _obj(a={"allOf": [{"type": "string"}], "description": "d"})
    merged = to_dialect(one, dialect)["properties"]["a"]  # type: ignore[arg-type]
    assert merged.get("type") == "string" or {"type": "string"} in merged.get("anyOf", [])
    two = _obj(a={"allOf": [{"type": "string"}, {"maxLength": 3}]})
    with pytest.raises(UnsupportedSchema, match="allOf"):
        to_dialect(two, dialect)  # type: ignore[arg-type]


def test_the_memory_lives_next_to_the_cache(tmp_path: Path) -> None:
    from tests.fakes.scripted_llm import offline_settings

    settings = offline_settings()
    own = settings.model_copy(
        update={"cache": settings.cache.model_copy(update={"dir": str(tmp_path / "c")})}
    )
    assert RungMemory.for_settings(own).path == tmp_path / "c" / "output-modes.json"
    unset = settings.model_copy(update={"cache": settings.cache.model_copy(update={"dir": None})})
    from deepsearch.web.cache import default_cache_dir

    assert RungMemory.for_settings(unset).path == default_cache_dir() / "output-modes.json"


def test_the_memory_file_is_written_whole_in_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    made: list[str] = []
    real = tempfile.mkstemp

    def mkstemp(**kwargs: Any) -> tuple[int, str]:
        fd, name = real(**kwargs)
        made.append(name)
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    path = tmp_path / "not" / "yet" / "output-modes.json"  # folders created
    RungMemory(path).put("http://a/v1", "m1", "json_object", "refuses json_schema")
    RungMemory(path).put("http://b/v1", "m2", "prompted", "")
    kept = json.loads(path.read_text("utf-8"))
    assert [(k, v["mode"], v["why"]) for k, v in kept.items()] == [
        ("http://a/v1 m1", "json_object", "refuses json_schema"),
        ("http://b/v1 m2", "prompted", ""),
    ]
    assert [Path(n).parent for n in made] == [path.parent, path.parent]  # renamed in place
    assert all(Path(n).name.startswith(".output-modes.") for n in made)
    assert sorted(p.name for p in path.parent.iterdir()) == ["output-modes.json"]


def test_a_servers_url_is_its_key_but_for_a_trailing_slash(tmp_path: Path) -> None:
    memory = RungMemory(tmp_path / "m.json")
    memory.put("http://a/BOX/", "m1", "json_object", "")
    assert memory.get("http://a/BOX", "m1") is not None
    assert memory.get("http://a/BO", "m1") is None


async def test_a_ladder_without_a_server_name_keeps_its_rung_under_an_empty_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.json"
    ladder = OutputModeLadder(LOCAL_RUNGS, memory=RungMemory(path))
    await ladder.complete(request(), _SlowRefusal().send)
    assert RungMemory(path).get("", "m1") is not None


async def test_why_names_every_refused_rung_in_order() -> None:
    class _Refuses:
        async def send(self, mode: OutputMode) -> Completion:
            if mode in ("json_schema", "json_object_schema"):
                error = ProviderError(f"{mode} refused", provider="fake")
                raise ModeRejected(error, 500 if mode == "json_schema" else None)
            return Completion(text="{}", mode=mode)

    ladder = OutputModeLadder(LOCAL_RUNGS)
    await ladder.complete(request(), _Refuses().send)
    assert ladder.why == {
        "m1": "refuses response_format json_schema (HTTP 500); refuses json_object + schema"
    }
    error = ProviderError("json_schema refused", provider="fake")
    assert str(ModeRejected(error, 400)) == str(error)


class _Ordered(BaseModel):
    n: int
    title: str = Field(max_length=7)


def test_every_over_long_value_is_trimmed_whatever_comes_before_it() -> None:
    value = {"n": "x", "title": "one two three"}
    with pytest.raises(ValidationError) as caught:
        _Ordered.model_validate(value)
    assert [e["type"] for e in caught.value.errors()] == ["int_parsing", "string_too_long"]
    assert trim_to_limits(value, caught.value) == {"n": "x", "title": "one two"}


def test_a_validation_error_in_one_line() -> None:
    with pytest.raises(ValidationError) as root:
        _Ordered.model_validate([1])
    assert (
        summarize(root.value)
        == "(root): Input should be a valid dictionary or instance of _Ordered"
    )
    with pytest.raises(ValidationError) as two:
        _Limited.model_validate({"title": 5, "tags": [1], "n": "x"})
    assert summarize(two.value) == (
        "title: Input should be a valid string; tags.0: Input should be a valid string; "
        "n: Input should be a valid integer, unable to parse string as an integer"
    )
    assert summarize(two.value, limit=1) == "title: Input should be a valid string"


def test_a_length_error_that_cannot_be_located_is_skipped_not_a_crash() -> None:
    error = ValidationError.from_exception_data(
        "M",
        [
            {"type": "string_too_long", "loc": (), "input": "x" * 9, "ctx": {"max_length": 3}},
            {
                "type": "string_too_long",
                "loc": ("tags", 10),
                "input": "x",
                "ctx": {"max_length": 1},
            },
            {
                "type": "string_too_long",
                "loc": ("title",),
                "input": "ab cd",
                "ctx": {"max_length": 3},
            },
        ],
    )
    value = {"title": "ab cd", "tags": ["a"]}
    assert trim_to_limits(value, error) == {"title": "ab", "tags": ["a"]}
    root = ValidationError.from_exception_data(
        "M", [{"type": "string_too_long", "loc": (), "input": "x" * 9, "ctx": {"max_length": 3}}]
    )
    assert trim_to_limits("x" * 9, root) == "x" * 9  # left for the validator to refuse


def test_a_ladder_ending_on_a_native_rung_is_refused() -> None:
    for rungs in [("json_schema", "json_object_schema"), ("json_schema",), ()]:
        with pytest.raises(ValueError) as caught:
            OutputModeLadder(rungs)  # type: ignore[arg-type]
        assert str(caught.value) == "the last rung must carry the schema in the prompt"


async def test_a_first_rung_accepted_says_so() -> None:
    ladder = OutputModeLadder(LOCAL_RUNGS)

    async def accept(mode: OutputMode) -> Completion:
        return Completion(text="{}", mode=mode)

    await ladder.complete(request(), accept)
    assert ladder.why == {"m1": "accepts response_format json_schema"}


async def test_one_models_first_climb_does_not_hold_up_anothers() -> None:
    ladder = OutputModeLadder(LOCAL_RUNGS)
    b_started = asyncio.Event()

    async def send_a(mode: OutputMode) -> Completion:
        await asyncio.wait_for(b_started.wait(), 5)  # waits for m-b's first call
        return Completion(text="{}", mode=mode)

    async def send_b(mode: OutputMode) -> Completion:
        b_started.set()
        return Completion(text="{}", mode=mode)

    a = asyncio.create_task(ladder.complete(request(model="m-a"), send_a))
    await asyncio.sleep(0)
    done_b = await asyncio.wait_for(ladder.complete(request(model="m-b"), send_b), 5)
    assert done_b.mode == "json_schema" and (await a).mode == "json_schema"


def test_a_summary_names_at_most_five_errors() -> None:
    class _Many(BaseModel):
        a: int
        b: int
        c: int
        d: int
        e: int
        f: int

    with pytest.raises(ValidationError) as caught:
        _Many.model_validate(dict.fromkeys("abcdef", "x"))
    assert [part.split(":")[0] for part in summarize(caught.value).split("; ")] == list("abcde")
