"""The three schema dialects (llm/schema_dialects.py) on one schema that has a bit of
everything, compared whole: what each provider is sent, including the descriptions that
carry a stripped keyword's intent and strict mode's nullable optionals. Then the edges:
what cannot be expressed (and the message saying so), `$ref` inlining, distilling, and
the nulls strict mode forces turned back into defaults."""

from __future__ import annotations

from typing import Any

import pytest

from deepsearch.llm.schema_dialects import (
    GEMINI,
    GRAMMAR,
    OPENAI_STRICT,
    UnsupportedSchema,
    distill_schema,
    drop_null_defaults,
    inline_refs,
    to_dialect,
)

SCHEMA = {
    "type": "object",
    "title": "T",
    "$defs": {"Tag": {"type": "string", "maxLength": 5000, "minLength": 1}},
    "properties": {
        "name": {"type": "string", "description": "Who", "maxLength": 20, "pattern": "^a"},
        "kind": {"const": "x"},
        "level": {"enum": [1, 2]},
        "score": {"type": "number", "minimum": 0, "exclusiveMaximum": 1, "default": 0.5},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}, "maxItems": 3},
        "when": {"type": "string", "format": "date-time"},
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "nested": {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]},
    },
    "required": ["name", "kind"],
}

STRICT = {
    "type": "object",
    "properties": {
        "name": {"description": "Who (at most 20 characters)", "type": "string", "pattern": "^a"},
        "kind": {"type": "string", "enum": ["x"]},
        "level": {
            "anyOf": [{"type": "integer", "enum": [1, 2]}, {"type": "null"}],
            "description": "null means the default",
        },
        "score": {
            "anyOf": [{"type": "number", "exclusiveMaximum": 1, "minimum": 0}, {"type": "null"}],
            "description": "null means the default, 0.5",
        },
        "tags": {
            "anyOf": [
                {
                    "type": "array",
                    "items": {
                        "type": "string",
                        "description": "at most 5000 characters; at least 1 characters",
                    },
                    "maxItems": 3,
                },
                {"type": "null"},
            ],
            "description": "null means the default",
        },
        "when": {
            "anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}],
            "description": "null means the default",
        },
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "nested": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"a": {"type": "boolean"}},
                    "additionalProperties": False,
                    "required": ["a"],
                },
                {"type": "null"},
            ],
            "description": "null means the default",
        },
    },
    "additionalProperties": False,
    "required": ["name", "kind", "level", "score", "tags", "when", "maybe", "nested"],
}

GEMINI_OUT = {
    "type": "object",
    "properties": {
        "name": {
            "description": "Who (at most 20 characters; matching the regular expression ^a)",
            "type": "string",
        },
        "kind": {"type": "string", "enum": ["x"]},
        "level": {"type": "integer", "enum": [1, 2]},
        "score": {"type": "number", "minimum": 0, "description": "less than 1"},
        "tags": {
            "type": "array",
            "items": {
                "type": "string",
                "description": "at most 5000 characters; at least 1 characters",
            },
            "maxItems": 3,
        },
        "when": {"type": "string", "format": "date-time"},
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "nested": {
            "type": "object",
            "properties": {"a": {"type": "boolean"}},
            "additionalProperties": False,
            "required": ["a"],
        },
    },
    "additionalProperties": False,
    "required": ["name", "kind"],
}

GRAMMAR_OUT = {
    "type": "object",
    "properties": {
        "name": {
            "description": "Who (matching the regular expression ^a)",
            "type": "string",
            "maxLength": 20,
        },
        "kind": {"type": "string", "enum": ["x"]},
        "level": {"type": "integer", "enum": [1, 2]},
        "score": {"type": "number", "minimum": 0, "description": "less than 1"},
        "tags": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 1000},
            "maxItems": 3,
        },
        "when": {"type": "string", "description": "in date-time format"},
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "nested": {
            "type": "object",
            "properties": {"a": {"type": "boolean"}},
            "additionalProperties": False,
            "required": ["a"],
        },
    },
    "additionalProperties": False,
    "required": ["name", "kind"],
}


@pytest.mark.parametrize(
    ("dialect", "expected"), [(OPENAI_STRICT, STRICT), (GEMINI, GEMINI_OUT), (GRAMMAR, GRAMMAR_OUT)]
)
def test_each_dialect_gets_exactly_its_subset(dialect: Any, expected: dict[str, Any]) -> None:
    assert to_dialect(SCHEMA, dialect) == expected
    assert to_dialect(SCHEMA, dialect) == expected  # again, from the cache: a fresh copy


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object"}, "a free-form object (no fixed properties) cannot be constrained"),
        (
            {"type": "object", "properties": {}},
            "a free-form object (no fixed properties) cannot be constrained",
        ),
        (
            {**_obj(a={"type": "string"}), "additionalProperties": True},
            "a free-form object (no fixed properties) cannot be constrained",
        ),
        (
            {**_obj(a={"type": "string"}), "additionalProperties": {"type": "string"}},
            "a free-form object (no fixed properties) cannot be constrained",
        ),
        (_obj(a=["string"]), "a schema must be an object, not list"),
        (_obj(a={"type": "string", "not": {}, "if": {}}), "unsupported keyword(s): if, not"),
        (_obj(a={"type": "string", "x-custom": 1}), "unsupported keyword 'x-custom'"),
        (_obj(a={"enum": [1, "a"]}), "unsupported or missing type None"),
        (_obj(a={"enum": [True, False]}), "unsupported or missing type None"),
        (_obj(a={"type": ["string", "null"]}), "unsupported or missing type ['string', 'null']"),
        (_obj(a={"type": "uuid"}), "unsupported or missing type 'uuid'"),
        ({"type": "string"}, "the root must be an object"),
        (
            _obj(a={"$ref": "#/$defs/Missing"}),
            "cannot inline $ref '#/$defs/Missing' (recursive or unknown)",
        ),
        (
            {**_obj(a={"$ref": "other.json#/$defs/A"}), "$defs": {"A": {"type": "string"}}},
            "cannot inline $ref 'other.json#/$defs/A' (recursive or unknown)",
        ),
    ],
)
def test_what_cannot_be_expressed_is_refused_with_its_reason(
    schema: dict[str, Any], message: str
) -> None:
    for dialect in (OPENAI_STRICT, GEMINI, GRAMMAR):
        with pytest.raises(UnsupportedSchema) as caught:
            to_dialect(schema, dialect)
        assert str(caught.value) == message


def test_an_object_without_additional_properties_or_with_none_is_closed() -> None:
    open_default = to_dialect(_obj(a={"type": "string"}), GEMINI)
    assert open_default["additionalProperties"] is False
    with_none = to_dialect({**_obj(a={"type": "string"}), "additionalProperties": None}, GEMINI)
    assert with_none["additionalProperties"] is False


def test_a_typed_enum_keeps_its_type_and_a_description_of_a_union_keeps_its_notes() -> None:
    typed = to_dialect(_obj(a={"type": "string", "enum": ["x", "y"]}), GRAMMAR)
    assert typed["properties"]["a"] == {"type": "string", "enum": ["x", "y"]}
    union = _obj(a={"anyOf": [{"type": "string"}, {"type": "integer"}], "description": "A"})
    union["properties"]["a"]["examples"] = ["x"]  # silent
    out = to_dialect(union, GEMINI)["properties"]["a"]
    assert out == {"anyOf": [{"type": "string"}, {"type": "integer"}], "description": "A"}
    array = _obj(a={"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    assert to_dialect(array, GRAMMAR)["properties"]["a"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "no repeated items",
    }
    nested = _obj(a={"type": "array", "prefixItems": [{"type": "string", "minLength": 2}]})
    assert to_dialect(nested, GEMINI)["properties"]["a"] == {
        "type": "array",
        "prefixItems": [{"type": "string", "description": "at least 2 characters"}],
    }


def test_refs_are_inlined_from_defs_or_definitions_with_their_siblings() -> None:
    schema = {
        **_obj(
            a={"$ref": "#/definitions/A", "description": "the a"},
            b={"$ref": "#/$defs/B"},
            c={"type": "array", "items": [{"$ref": "#/$defs/B"}]},
        ),
        "definitions": {"A": {"type": "string", "description": "plain"}},
        "$defs": {"B": {"type": "integer"}},
    }
    assert inline_refs(schema) == _obj(
        a={"type": "string", "description": "the a"},
        b={"type": "integer"},
        c={"type": "array", "items": [{"type": "integer"}]},
    )
    recursive = {**_obj(a={"$ref": "#/$defs/N"}), "$defs": {"N": _obj(n={"$ref": "#/$defs/N"})}}
    with pytest.raises(UnsupportedSchema, match="recursive or unknown"):
        inline_refs(recursive)
    twice = {
        **_obj(a={"$ref": "#/$defs/B"}, b={"$ref": "#/$defs/B"}),
        "$defs": {"B": {"type": "integer"}},
    }
    assert inline_refs(twice) == _obj(a={"type": "integer"}, b={"type": "integer"})


def test_distilling_drops_descriptions_and_limits_only() -> None:
    schema = {
        **_obj(
            a={"type": "string", "description": "d", "maxLength": 3, "minLength": 1, "title": "A"},
            b={
                "type": "array",
                "items": {"type": "string", "examples": ["x"]},
                "maxItems": 2,
                "minItems": 1,
            },
        ),
        "required": ["a"],
    }
    assert distill_schema(schema) == {
        **_obj(a={"type": "string"}, b={"type": "array", "items": {"type": "string"}}),
        "required": ["a"],
    }
    assert schema["properties"]["a"]["maxLength"] == 3  # the original untouched


def test_nulls_strict_mode_forced_become_defaults_real_nulls_stay() -> None:
    schema = {
        "type": "object",
        "properties": {
            "think": {"type": "string", "default": ""},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "name": {"type": "string"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/I"}},
            "pick": {"anyOf": [{"$ref": "#/$defs/I"}, {"$ref": "#/$defs/J"}]},
        },
        "required": ["name"],
        "$defs": {
            "I": _obj(x={"type": "integer", "default": 0}),
            "J": _obj(y={"type": "integer", "default": 0}, z={"type": "string"}),
        },
    }
    data = {
        "think": None,
        "note": None,
        "name": None,
        "items": [{"x": None}, {"x": 2}],
        "pick": {"y": None, "z": "k"},
    }
    assert drop_null_defaults(schema, data) == {
        "note": None,
        "name": None,
        "items": [{}, {"x": 2}],
        "pick": {"z": "k"},
    }
    assert drop_null_defaults(schema, [1]) == [1]
    broken = {**schema, "properties": {"a": {"$ref": "#/$defs/Nope"}}}
    # A $ref that cannot be inlined is read as it is: an optional, non-nullable field.
    assert drop_null_defaults(broken, {"a": None, "name": None}) == {"name": None}


def test_a_format_the_dialect_lacks_becomes_words() -> None:
    schema = {**_obj(a={"type": "string", "format": "uri"}), "required": ["a"]}
    for dialect in (OPENAI_STRICT, GEMINI):
        assert to_dialect(schema, dialect)["properties"]["a"] == {
            "type": "string",
            "description": "in uri format",
        }


def test_a_strict_optional_keeps_its_description_before_the_null_note() -> None:
    schema = _obj(a={"type": "string", "description": "D", "maxLength": 3})
    assert to_dialect(schema, OPENAI_STRICT)["properties"]["a"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "description": "D (at most 3 characters) (null means the default)",
    }


def test_a_ref_that_is_no_path_is_refused() -> None:
    schema = {**_obj(a={"$ref": "Tag"}), "$defs": {"Tag": {"type": "string"}}}
    with pytest.raises(UnsupportedSchema) as caught:
        inline_refs(schema)
    assert str(caught.value) == "cannot inline $ref 'Tag' (recursive or unknown)"


def test_a_null_for_a_field_typed_nullable_by_a_type_list_stays() -> None:
    schema = _obj(a={"type": ["string", "null"]}, b={"type": "string"})
    assert drop_null_defaults(schema, {"a": None, "b": None}) == {"a": None}


def test_data_fitting_no_branch_is_read_against_the_first() -> None:
    schema = {
        "anyOf": [
            _obj(x={"type": "integer", "default": 0}),
            _obj(y={"type": "integer"}, z={"type": "string"}),
        ]
    }
    assert drop_null_defaults(schema, {"x": None, "q": 1}) == {"q": 1}
    assert drop_null_defaults(schema, {"y": None, "z": "k"}) == {"z": "k"}


def test_more_edges_of_the_conversion() -> None:
    # A $ref's siblings are inlined too, refs inside them included.
    schema = {
        **_obj(a={"$ref": "#/$defs/A", "anyOf": [{"$ref": "#/$defs/B"}]}),
        "$defs": {"A": {"description": "a"}, "B": {"type": "integer"}},
    }
    assert inline_refs(schema) == _obj(a={"description": "a", "anyOf": [{"type": "integer"}]})
    # A union's own stripped keywords keep their intent.
    union = _obj(a={"anyOf": [{"type": "string"}, {"type": "null"}], "pattern": "^x"})
    assert to_dialect(union, GEMINI)["properties"]["a"]["description"] == (
        "matching the regular expression ^x"
    )
    # A typed enum keeps its type even when the values alone would not say it.
    number = _obj(a={"type": "number", "enum": [1.5, 2.5]})
    assert to_dialect(number, GRAMMAR)["properties"]["a"] == {"type": "number", "enum": [1.5, 2.5]}
    # A format dropped does not drop the keywords after it.
    strict = {**_obj(a={"type": "string", "format": "uri", "pattern": "^h"}), "required": ["a"]}
    assert to_dialect(strict, OPENAI_STRICT)["properties"]["a"] == {
        "type": "string",
        "pattern": "^h",
        "description": "in uri format",
    }
