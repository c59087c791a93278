"""The lenient parse ladder, with a property test over wrapped JSON objects."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepsearch.llm.parse import ParseFailure, parse_json_lenient

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**9), 10**9)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, min_size=1, max_size=5)
# Prose never contains JSON openers or fence/tag characters (then it would be JSON).
prose = st.text(
    alphabet=st.characters(
        blacklist_characters="{}[]`<>\"'", blacklist_categories=("Cs",), codec="utf-8"
    ),
    max_size=60,
)
think = st.text(max_size=60).filter(lambda t: "</think" not in t.lower())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    obj=json_objects,
    before=prose,
    after=prose,
    thought=st.none() | think,
    fence=st.sampled_from(["", "```json\n", "```\n"]),
    indent=st.sampled_from([None, 2]),
)
def test_wrapped_object_is_recovered_exactly(
    obj: dict, before: str, after: str, thought: str | None, fence: str, indent: int | None
) -> None:
    body = json.dumps(obj, indent=indent, ensure_ascii=False)
    if fence:
        body = f"{fence}{body}\n```"
    text = f"{before}\n{body}\n{after}"
    if thought is not None:
        text = f"<think>{thought}</think>\n{text}"
    assert parse_json_lenient(text) == obj


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "no json here at all",
        '<think>{"a": 1}</think>',
        "[1, 2]",
        "Note: nothing was found",  # Hjson would read this as an object
        # the must-fail cases of the jsonrepair suite that a ladder could wrongly accept
        "callback {}",
        '{"a",',
        "{:2}",
        '{"a":2}{}',
        '{"a" ]',
        '{"a":2}foo',
        "foo [",
    ],
)
def test_no_object_is_a_parse_failure(text: str) -> None:
    with pytest.raises(ParseFailure):
        parse_json_lenient(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1,}', {"a": 1}),
        ("{a: 1, b: 'x'}", {"a": 1, "b": "x"}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('<thinking>x</thinking>```json\n{"a": true}\n```', {"a": True}),
        ('<think>unfinished reasoning {"a": 2}', {"a": 2}),
        ('{"a": 2}\n\nHope this helps!', {"a": 2}),
        ('{"a" "b"}', {"a": "b"}),
        ('{"a":"b,"c":"d"}', {"a": "b", "c": "d"}),  # Hjson's reading would be wrong
        ('Here is your JSON: {"key": "value', {"key": "value"}),
    ],
)
def test_repairs(text: str, expected: dict) -> None:
    assert parse_json_lenient(text) == expected


def test_prose_line_before_the_object_is_not_a_glued_bare_word() -> None:
    # Regression: the bare-word guard's "$" matched before the newline.
    assert parse_json_lenient('Sure \n{"a": 1}') == {"a": 1}
    assert parse_json_lenient('A \n{"": null}\n') == {"": None}
