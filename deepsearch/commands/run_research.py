"""Running one research (a deepsearch.session.ResearchSession) and reporting it: the
live view, signals, the answer on stdout, the summary and error on stderr, and the exit
code from the result's data."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepsearch.agent.handover import Carryover
    from deepsearch.agent.result import ResearchResult
    from deepsearch.cassettes import CassetteSpec
    from deepsearch.config import Settings
    from deepsearch.frontend.live import LiveView
    from deepsearch.session import ResearchSession


def run_research(
    question: str,
    settings: Settings,
    *,
    as_json: bool,
    quiet: bool,
    trace_path: Path | None,
    cassette: CassetteSpec | None = None,
    earlier: Carryover | None = None,
) -> int:
    """Run, report, and the exit code: the result's, or the signal's when interrupted.
    A configuration that cannot work (no provider) is a ConfigError for the CLI."""
    from deepsearch.commands.signals import signals_interrupt
    from deepsearch.frontend.live import LiveView
    from deepsearch.frontend.output import safe_result
    from deepsearch.session import ResearchSession

    view = LiveView(quiet=quiet)
    session = ResearchSession(
        question, settings, emit=view, trace_path=trace_path, cassette=cassette,
        earlier=earlier, present=safe_result,
    )  # fmt: skip
    view.start("starting")
    with signals_interrupt() as caught:
        try:  # cut-short runs too leave through the cassette (an interrupted
            result = _result(session)  # recording still has its result.json)
        finally:
            view.stop()  # before any line on stderr, the error's included
        _report(result, view, as_json=as_json, quiet=quiet)
        _warn(session.warnings)
    return caught.exit_code() if result.status == "interrupted" else result.exit_code


def _warn(warnings: list[str]) -> None:
    """`warning: ...` on stderr, one line each (the history could not keep the run),
    even with --quiet: the user would otherwise look for the run in vain."""
    from deepsearch.frontend.output import clean_line

    for warning in warnings:
        sys.stderr.write(f"warning: {clean_line(warning)}\n")
    sys.stderr.flush()


def _result(session: ResearchSession) -> ResearchResult:
    """The session's result; an interruption (Ctrl-C, SIGTERM, SIGHUP) becomes a
    cut-short one. A ConfigError is the CLI's to print (exit 2)."""
    try:
        return asyncio.run(session.execute())
    except KeyboardInterrupt:
        return session.cut_short("interrupted")


def _report(result: ResearchResult, view: LiveView, *, as_json: bool, quiet: bool) -> None:
    """The answer on stdout; the summary and the error on stderr (rich is imported
    only to draw them on a terminal, see frontend/live.py)."""
    from deepsearch.commands.render import print_answer, summary_line
    from deepsearch.commands.stdout import guarded_stdout
    from deepsearch.frontend.output import safe_result

    view.stop()
    result = safe_result(result)  # no escape sequence from a source reaches a terminal
    with guarded_stdout():
        print_answer(result, as_json=as_json)
    if not quiet:
        view.summary(summary_line(result))
    if result.warnings and not quiet:  # cited pages that instruct the model
        from rich.markup import escape

        for warning in result.warnings:
            view.console.print(f"[bold yellow]warning:[/] {escape(warning)}")
    if result.error and not as_json:
        from rich.markup import escape

        view.console.print(f"[bold red]error:[/] {escape(result.error)}")
