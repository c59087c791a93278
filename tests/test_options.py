"""One declaration per option (issue 19): a research option's bound is its
configuration key's, declared once on the field (config.key_bounds), and every front
end — the CLI's flags, serve's request knobs, the MCP tool's arguments, the library's
keywords — goes through the configuration's validation with it. So a value at the
bound is accepted by all of them (and by the loop's RunOptions), a value past it is
refused by all of them with the same one-line message, only the name differing.

The values are computed from the declared bounds: change a bound in config/models.py
and every front end follows; declare a second bound anywhere (a literal `le=` in
RunOptions, a Field bound on a request knob, a range in a Typer option, a check in the
MCP tool) and one of these tests fails."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from deepsearch.agent.deps import AgentOptions, RunOptions
from deepsearch.config import key_bounds, load_config
from deepsearch.errors import ConfigError
from deepsearch.frontend.options import OPTIONS, ResearchOption
from deepsearch.mcp_server import tool
from deepsearch.server.request import KNOB_KEYS, RequestError, parse_request, run_settings
from tests.cli.inprocess import run_cli_in_process

BOUNDED = [
    row
    for row in OPTIONS
    if row.config_key and row.kind in (int, float) and any(v is not None for v in row.bounds)
]
BASE = load_config(environ={}).settings
MAX_BUDGET = 10**9


def _past(row: ResearchOption) -> list[Any]:
    """Values just outside each declared bound."""
    b, step = row.bounds, 1 if row.kind is int else 0.5
    values: list[Any] = []
    if b.ge is not None:
        values.append(row.kind(b.ge - step))
    if b.gt is not None:
        values.append(row.kind(b.gt))
    if b.le is not None:
        values.append(row.kind(b.le + step))
    if b.lt is not None:
        values.append(row.kind(b.lt))
    return values


def _at(row: ResearchOption) -> list[Any]:
    """Values on (or, for a strict bound, just inside) each declared bound."""
    b, step = row.bounds, 1 if row.kind is int else 0.5
    inside = [
        b.ge,
        b.le,
        None if b.gt is None else b.gt + step,
        None if b.lt is None else b.lt - step,
    ]
    return [row.kind(v) for v in inside if v is not None]


def _cases(values: Callable[[ResearchOption], list[Any]]) -> list[Any]:
    return [pytest.param(row, v, id=f"{row.name}={v}") for row in BOUNDED for v in values(row)]


# Each front end: (its name for the row or None when it has no such knob, how it
# applies one value -> the error text or None when accepted).
def _cli(row: ResearchOption, value: Any) -> str | None:
    # `config` loads the settings `research` would (the same flags and override path)
    # and needs no provider; `research` itself stops at the same error (below).
    done = run_cli_in_process("config", "--json", row.flag, str(value))
    if done.returncode == 0:
        return None
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    return done.stderr.strip().removeprefix("error: ")


def _serve_knob(row: ResearchOption) -> str | None:
    return next((k for k, key in KNOB_KEYS.items() if key == row.config_key), None)


def _serve(row: ResearchOption, value: Any) -> str | None:
    knob = _serve_knob(row)
    body = {"messages": [{"role": "user", "content": "q?"}], knob: value}
    try:
        run_settings(BASE, parse_request(body), MAX_BUDGET)
    except RequestError as exc:
        assert exc.param == knob
        return str(exc)
    return None


def _mcp(row: ResearchOption, value: Any) -> str | None:
    from deepsearch.mcp_server.app import McpConfig, Progress, call_research

    if row.name in tool.KNOBS:
        arguments = {"question": "q?", row.name: value}
        config = McpConfig(options={}, max_budget=MAX_BUDGET)
        try:  # the settings the call would run with, or the call's error result
            tool.call_settings(config.options, tool.parse_arguments(arguments)[1], MAX_BUDGET)
        except ConfigError:
            result = asyncio.run(call_research(config, arguments, Progress(None)))
            assert result.isError
            return result.content[0].text.removeprefix("error: ")  # type: ignore[union-attr]
    return None


def _library(row: ResearchOption, value: Any) -> str | None:
    import deepsearch
    from deepsearch.library import load_settings

    try:
        load_settings({row.name: value})
    except ConfigError as exc:
        with pytest.raises(
            ConfigError, match="^" + str(exc).replace("(", r"\(").replace(")", r"\)")
        ):
            deepsearch.research("q?", **{row.name: value})  # the public call, before any run
        return str(exc)
    return None


def _front_ends(
    row: ResearchOption,
) -> dict[str, tuple[str, Callable[[ResearchOption, Any], str | None]]]:
    ends = {"cli": (row.flag, _cli), "library": (row.name, _library)}
    if row.name in tool.KNOBS:
        ends["mcp"] = (row.name, _mcp)
    if (knob := _serve_knob(row)) is not None:
        ends["serve"] = (knob, _serve)
    return ends


def test_the_bounded_options_are_the_table_s_numeric_rows() -> None:
    names = {row.name for row in BOUNDED}
    assert names >= {"budget", "max_steps", "timeout", "max_bad_attempts", "team_size",
                     "max_references", "min_confidence"}  # fmt: skip
    assert {"team_size", "max_references", "budget"} <= {
        row.name for row in BOUNDED if _serve_knob(row)
    }


@pytest.mark.parametrize(("row", "value"), _cases(_past))
def test_a_value_past_its_bound_is_refused_by_every_front_end_alike(
    row: ResearchOption, value: Any
) -> None:
    messages = {}
    for end, (name, apply) in _front_ends(row).items():
        message = apply(row, value)
        assert message is not None, f"{end} accepted {name}={value}"
        assert "\n" not in message and message.startswith(f"{name}: {row.config_key}: "), message
        messages[end] = message.removeprefix(f"{name}: ")
    assert len(set(messages.values())) == 1, messages  # one bound, one message


@pytest.mark.parametrize(("row", "value"), _cases(_at))
def test_a_value_at_its_bound_is_accepted_by_every_front_end_and_the_loop(
    row: ResearchOption, value: Any
) -> None:
    for end, (name, apply) in _front_ends(row).items():
        assert apply(row, value) is None, f"{end} refused {name}={value}"
    key = row.config_key or ""
    if key.removeprefix("agent.") in AgentOptions.model_fields:
        settings = load_config(overrides={key: value}, environ={}).settings
        options = RunOptions.from_settings(settings)  # a second bound in RunOptions fails
        assert getattr(options, key.removeprefix("agent.")) == value


def test_run_options_carry_every_loop_key_of_the_configuration() -> None:
    """RunOptions is derived, not copied: each agent.* key the loop reads, its default
    and its bounds are the configuration's (a field redeclared in RunOptions shows)."""
    for name, field in AgentOptions.model_fields.items():
        assert RunOptions.model_fields[name].metadata == field.metadata, name
        assert RunOptions.model_fields[name].default == field.default, name
    settings = load_config(overrides={"search.results_per_query": 50}, environ={}).settings
    assert RunOptions.from_settings(settings).results_per_query == 50
    assert key_bounds("search.results_per_query").le == 50
    with pytest.raises(ValueError, match="less than or equal to 50"):
        RunOptions(results_per_query=51)


def test_research_itself_stops_at_the_bound_with_exit_2() -> None:
    done = run_cli_in_process("research", "--team-size", "9", "q?")
    assert done.returncode == 2
    assert done.stderr == (
        "error: --team-size: agent.team_size: Input should be less than or equal to 8\n"
    )


# ------------------------------------------------------------------- the language


@pytest.mark.parametrize(
    "value",
    # A name in its own script is a name too, however few letters it has ("中文"), and
    # a name's first word may be short ("Old English"): names stay free-form.
    ["de", "pt-BR", "zh-Hant", "German", "Brazilian Portuguese", "中文", "日本語", "한국어",
     "Old English", "Lao", "Ewe", ""],
)  # fmt: skip
def test_a_language_code_or_name_is_accepted_everywhere(value: str) -> None:
    row = next(r for r in OPTIONS if r.name == "language")
    for end, (name, apply) in _front_ends(row).items():
        assert apply(row, value) is None, f"{end} refused {name}={value}"


@pytest.mark.parametrize(
    ("value", "why"),
    [("zz-bad", "unknown language code 'zz-bad'"), ("xx", "unknown language code 'xx'"),
     ("de_DE", "not a language code or name 'de_DE'"), ("123", "not a language code or name")],
)  # fmt: skip
def test_an_unknown_language_is_one_clear_line_everywhere(value: str, why: str) -> None:
    row = next(r for r in OPTIONS if r.name == "language")
    messages = set()
    for end, (name, apply) in _front_ends(row).items():
        message = apply(row, value)
        assert message is not None, f"{end} accepted {name}={value}"
        assert message.startswith(f"{name}: agent.language: {why}"), (end, message)
        messages.add(message.removeprefix(f"{name}: "))
    assert len(messages) == 1, messages


def test_a_blank_language_is_not_given_and_a_name_is_kept_as_written() -> None:
    """`--language "$VAR"` with VAR empty detects the question's language; a
    three-letter name written as a name ("Lao") is a name, its code form an error."""
    import json

    blank = run_cli_in_process("config", "--language", " ", "--json")
    assert json.loads(blank.stdout)["agent.language"]["value"] is None
    lao = run_cli_in_process("config", "--language", "Lao", "--json")
    assert json.loads(lao.stdout)["agent.language"]["value"] == "Lao"
    assert run_cli_in_process("config", "--language", "lao").returncode == 2


def test_research_with_an_unknown_language_is_exit_2_before_anything_runs() -> None:
    done = run_cli_in_process("research", "--language", "zz-bad", "q?")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: --language: agent.language: unknown language code")
    assert "(known: ar, bg, " in done.stderr and done.stderr.count("\n") == 1
