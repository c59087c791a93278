"""`--budget 200k` and `--timeout 5m`: a flag accepts the units the live view prints
(issue 36, item 15); a value that is neither is one usage line, exit 2."""

from __future__ import annotations

import pytest

from deepsearch.commands.flags import overrides_of, parse_research_args
from deepsearch.frontend.units import parse_seconds, parse_tokens, tokens


@pytest.mark.parametrize(
    ("text", "value"),
    [("200000", 200_000), ("200,000", 200_000), ("200_000", 200_000), ("200k", 200_000),
     ("200K", 200_000), ("1.5M", 1_500_000), ("1m", 1_000_000), (" 60k ", 60_000)],
)  # fmt: skip
def test_token_counts_as_people_write_them(text: str, value: int) -> None:
    assert parse_tokens(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("90", 90.0), ("2.5", 2.5), ("90s", 90.0), ("5m", 300.0), ("1h", 3600.0),
     ("1m30s", 90.0), ("1h 30m", 5400.0)],
)  # fmt: skip
def test_durations_as_people_write_them(text: str, value: float) -> None:
    assert parse_seconds(text) == value


@pytest.mark.parametrize("text", ["", "k", "200x", "1.5k5", "0.0005k", "-5"])
def test_what_is_no_token_count(text: str) -> None:
    with pytest.raises(ValueError, match="tokens"):
        parse_tokens(text)


@pytest.mark.parametrize("text", ["", "m", "abc", "5m5m", "5 m 3", "1d", "-1"])
def test_what_is_no_duration(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_seconds(text)


def test_what_the_view_prints_a_flag_reads_back() -> None:
    for n in (60_000, 200_000, 500_000, 1_000_000, 1_500_000):
        assert parse_tokens(tokens(n)) == n


def test_the_flags_take_the_units() -> None:
    params = parse_research_args(["--budget", "200k", "--timeout", "5m"], "research")
    values = overrides_of(params)
    assert values["agent.budget"] == 200_000
    assert values["agent.timeout_s"] == 300.0


def test_a_bad_unit_is_one_usage_line() -> None:
    from tests.cli.test_config_and_doctor import run_cli

    outcome = run_cli("config", "--budget", "200x")
    assert outcome.returncode == 2
    assert outcome.stderr.strip().splitlines() == [
        "error: Invalid value for '--budget': '200x' is not a number of tokens "
        "(e.g. 200000, 200k, 1.5M) (see: deepsearch config --help)"
    ]


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_the_servers_budget_cap_takes_the_units_too(command: str) -> None:
    import typer

    from deepsearch.commands import mcp_cmd, serve_cmd

    function = serve_cmd.serve if command == "serve" else mcp_cmd.mcp_command
    app = typer.Typer(add_completion=False)
    app.command()(function)
    parsed = typer.main.get_command(app).make_context(command, ["--max-budget", "200k"])
    assert parsed.params["max_budget"] == 200_000


def test_a_budget_cap_below_the_smallest_budget_is_one_usage_line() -> None:
    from tests.cli.test_config_and_doctor import run_cli

    outcome = run_cli("serve", "--max-budget", "5k")
    assert outcome.returncode == 2
    assert outcome.stderr.strip() == (
        "error: Invalid value for '--max-budget': 5k is below the smallest budget, 10k "
        "(see: deepsearch serve --help)"
    )
