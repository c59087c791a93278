"""One table of research options (issue 9, item 5): the Typer parameters, `--help`,
the configuration overrides, the flag named in errors and docs/configuration.md all come from
`frontend.options.OPTIONS`, so a new row reaches every one of them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from deepsearch.commands.flags import overrides_of, parse_research_args
from deepsearch.commands.research_options import signature
from deepsearch.frontend.options import FLAG_OF, OPTIONS, ResearchOption, config_values

CONFIGURATION = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def _docs_section(title: str) -> str:
    text = CONFIGURATION.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_the_docs_list_every_research_option_and_no_other() -> None:
    table = [line for line in _docs_section("Research options").splitlines() if line[:1] == "|"]
    listed = set(re.findall(r"`(--[a-z-]+)", "\n".join(table)))
    assert listed == {option.flag for option in OPTIONS}


def _panels(help_text: str) -> dict[str, str]:
    """Each rich help panel's title -> its text (from the `╭─ Title ─` line to `╰`)."""
    panels: dict[str, str] = {}
    title = None
    for line in help_text.splitlines():
        if match := re.match(r"╭─ (.+?) ─", line):
            title = match.group(1)
            panels[title] = ""
        elif line.startswith("╰"):
            title = None
        elif title is not None:
            panels[title] += line + "\n"
    return panels


def test_help_shows_every_option_in_its_panel_with_its_metavar() -> None:
    from tests.cli.test_config_and_doctor import run_in_process

    panels = _panels(run_in_process("research", "--help", COLUMNS="160").stdout)
    for option in OPTIONS:
        line = next(
            (row for row in panels[option.panel].splitlines() if f" {option.flag} " in row + " "),
            None,
        )
        assert line is not None, (option.flag, option.panel)
        assert (option.metavar in line) if option.metavar else "<" not in line


def _parse(signature_of: Any, args: list[str]) -> dict[str, Any]:
    def command(**params: Any) -> None: ...

    command.__signature__ = signature_of  # type: ignore[attr-defined]
    app = typer.Typer(add_completion=False)
    app.command()(command)
    parser = typer.main.get_command(app)
    return dict(parser.make_context("deepsearch", args).params)


def test_one_new_row_is_a_parsed_flag_and_a_configuration_override() -> None:
    """What the TEAM helper's `--team-size` needed: a row, nothing else (now the real one)."""
    row = next(option for option in OPTIONS if option.name == "team_size")
    assert isinstance(row, ResearchOption)
    params = _parse(signature(OPTIONS), ["q?", "--team-size", "3"])
    assert params["team_size"] == 3
    assert config_values(params, (row,)) == {"agent.team_size": 3}
    # The parser checks the type only; the range is the key's, checked with the
    # configuration (tests/test_options.py), and shown in --help.
    assert _parse(signature(OPTIONS), ["q?", "--team-size", "0"])["team_size"] == 0
    assert row.help_line().endswith(r"\[1<=x<=8]")


def test_every_flag_becomes_its_configuration_key(tmp_path: Path) -> None:
    params = parse_research_args(
        ["--budget", "20000", "--max-cost", "0.25", "--effort", "low", "--max-steps", "7", "--timeout", "30",
         "--max-bad-attempts", "3", "--team-size", "2", "--no-direct-answer", "--boost-hostnames", "a.org, b.org,",
         "--bad-hostnames", "c.org", "--only-hostnames", "d.org", "--max-references", "4",
         "--min-confidence", "0.5", "--language", "de", "--search-provider", "jina",
         "--llm-provider", "openai", "--model", "m1", "--corpus", str(tmp_path),
         "--searxng-url", "http://s.lan", "--allow-private-urls", "--no-cache", "--no-history"],
        "research",
    )  # fmt: skip
    assert overrides_of(params) == {
        "agent.budget": 20000,
        "agent.max_cost": 0.25,
        "agent.effort": "low",
        "agent.max_steps": 7,
        "agent.timeout_s": 30.0,
        "agent.max_bad_attempts": 3,
        "agent.team_size": 2,
        "agent.direct_answer": False,
        "agent.boost_hostnames": ["a.org", "b.org"],
        "agent.bad_hostnames": ["c.org"],
        "agent.only_hostnames": ["d.org"],
        "agent.max_references": 4,
        "agent.min_confidence": 0.5,
        "agent.language": "de",
        "search.providers": ["jina", "local"],  # --corpus joins the chain
        "search.corpus_dir": str(tmp_path.resolve()),
        "search.searxng_url": "http://s.lan",
        "llm.provider": "openai",
        "llm.model": "m1",
        "reader.allow_private_urls": True,
        "cache.enabled": False,
        "history.enabled": False,
    }


def test_no_flag_leaves_every_key_to_the_configuration() -> None:
    values = overrides_of(parse_research_args([], "research"))
    assert values and all(value is None for value in values.values())


def test_a_bad_value_names_the_flag_but_a_switch_keeps_the_source_flag() -> None:
    assert FLAG_OF == {
        "agent.budget": "--budget",
        "agent.max_cost": "--max-cost",
        "agent.effort": "--effort",
        "agent.max_steps": "--max-steps",
        "agent.timeout_s": "--timeout",
        "agent.max_bad_attempts": "--max-bad-attempts",
        "agent.team_size": "--team-size",
        "agent.boost_hostnames": "--boost-hostnames",
        "agent.bad_hostnames": "--bad-hostnames",
        "agent.only_hostnames": "--only-hostnames",
        "agent.max_references": "--max-references",
        "agent.min_confidence": "--min-confidence",
        "agent.language": "--language",
        "search.providers": "--search-provider",
        "search.searxng_url": "--searxng-url",
        "llm.provider": "--llm-provider",
        "llm.model": "--model",
    }


def test_in_process_command_lines_reuse_one_built_command() -> None:
    """tests/conftest.py builds the app and its Click command once (a suite-speed
    measure): a command line run in process must not rebuild them."""
    from deepsearch import cli

    first = typer.main.get_command(cli.make_app())
    assert typer.main.get_command(cli.make_app()) is first
    assert cli.make_app(full=False) is not cli.make_app()
