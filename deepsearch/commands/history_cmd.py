"""`deepsearch history` and `deepsearch show RUN_ID`: the runs kept in the history
(deepsearch/history/, docs/history.md), read from the local file only: no network,
no provider, no key.

`history` lists them newest first (one line each, or `--json`: a list of objects);
`show` prints a stored run as it was printed: the answer (and the summary line on
stderr), or with `--json` the very line `--json` printed then.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from deepsearch.commands.common import ConfigOption
from deepsearch.commands.stdout import guarded_stdout
from deepsearch.errors import CommandFailed, UsageError
from deepsearch.frontend.output import clean_line

if TYPE_CHECKING:
    from pathlib import Path

    from deepsearch.history import HistoryStore
    from deepsearch.history.store import RunSummary

HISTORY_HELP = "List the runs kept in the history, newest first (see: docs/history.md)."
SHOW_HELP = "Print a run kept in the history as it was printed (--json: its JSON)."
QUESTION_CHARS = 70

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
# A question that starts with a command word (`deepsearch history of Rome`) is told
# to quote itself: it is never researched, and never silently dropped either.
Words = Annotated[list[str] | None, typer.Argument(hidden=True, show_default=False)]


def _store(config: Path | None) -> HistoryStore:
    from deepsearch.config import load_config
    from deepsearch.history import store_for

    return store_for(load_config(config_file=config).settings)


def _no_words(command: str, words: list[str] | None) -> None:
    if words:
        text = " ".join([command, *words])
        raise UsageError(
            f"`deepsearch {command}` takes no words (got {' '.join(words)!r}); "
            f'to research them, quote the whole question: deepsearch "{text}?"'
        )


def history(
    grep: Annotated[
        str | None,
        typer.Option("--grep", metavar="TEXT", help="Only runs whose question or answer has TEXT."),
    ] = None,
    limit: Annotated[
        int, typer.Option("-n", "--limit", metavar="N", min=1, help="At most N runs.")
    ] = 20,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    words: Words = None,
) -> None:
    from deepsearch.history import HistoryError

    _no_words("history", words)
    store = _store(config)
    try:
        runs = store.runs(grep=grep, limit=limit)
    except HistoryError as exc:
        raise CommandFailed(f"cannot read the history: {exc}") from None
    with guarded_stdout():
        if as_json:
            sys.stdout.write(json.dumps([r.model_dump() for r in runs], ensure_ascii=False) + "\n")
        elif not runs:
            sys.stderr.write(f"no runs kept yet ({store.path})\n")
        else:
            for run in runs:
                sys.stdout.write(_line(run) + "\n")


def _line(run: RunSummary) -> str:
    """`20261204-224530-3fa9c1  2026-12-04 22:45  answered   12.3k/500k  Which film…`"""
    from deepsearch.frontend.units import tokens

    when = run.started_at[:16].replace("T", " ")
    spent = f"{tokens(run.total_tokens)}/{tokens(run.budget)}"
    question = " ".join(clean_line(run.question).split())
    if len(question) > QUESTION_CHARS:
        question = question[: QUESTION_CHARS - 1] + "…"
    follow = "↳ " if run.continued_from else ""
    return f"{run.run_id}  {when}  {run.status:<11} {spent:>11}  {follow}{question}"


def show(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="A run id or a unique prefix.")],
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    from deepsearch.agent.result import ResearchResult
    from deepsearch.history import HistoryError

    store = _store(config)
    try:
        found = store.resolve(run_id.strip())
        output = store.output(found) if found is not None else None
    except HistoryError as exc:
        raise CommandFailed(f"cannot read the history: {exc}") from None
    if output is None:
        raise UsageError(
            f"no run {run_id!r} in the history ({store.path}; see: deepsearch history)"
        )
    with guarded_stdout():
        if as_json:
            sys.stdout.write(output + "\n")
            return
        from deepsearch.commands.render import print_answer, summary_line

        result = ResearchResult.model_validate_json(output)
        print_answer(result, as_json=False)
        sys.stderr.write(summary_line(result) + "\n")
