"""Running one research and reporting it: the live view, signals, the answer on
stdout, the summary and error on stderr, and the exit code from the result's data."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from deepsearch.commands.common import (
    EXIT_FORCED,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    fail,
)

if TYPE_CHECKING:
    from deepsearch.agent.result import ResearchResult, Status
    from deepsearch.cassettes import CassetteSpec
    from deepsearch.commands.live import LiveView
    from deepsearch.config import Settings
    from deepsearch.runtime import CassetteSession

STATUS_EXIT = {
    "answered": EXIT_OK,
    "forced": EXIT_FORCED,
    "not_found": EXIT_NOT_FOUND,
    "failed": EXIT_RUNTIME,
    "interrupted": EXIT_INTERRUPTED,
}


def run_research(
    question: str,
    settings: Settings,
    *,
    as_json: bool,
    quiet: bool,
    trace_path: Path | None,
    cassette: CassetteSpec | None = None,
) -> int:
    from deepsearch.agent.loop import ResearchRun
    from deepsearch.commands.live import LiveView
    from deepsearch.commands.signals import signals_interrupt
    from deepsearch.errors import ConfigError, DeepsearchError
    from deepsearch.runtime import (
        build_deps,
        build_trace,
        finish_cassette,
        open_cassette,
        run_options,
    )

    view = LiveView(quiet=quiet)
    holder: dict[str, ResearchRun] = {}
    sessions: dict[str, CassetteSession] = {}  # --record / --replay, once opened

    async def go() -> ResearchResult:
        trace = build_trace(trace_path, settings, question)
        async with AsyncExitStack() as stack:
            if trace is not None:
                stack.callback(trace.close)
            session = open_cassette(cassette, settings)
            if session is not None:
                sessions["cassette"] = session
            deps = await build_deps(
                settings, stack=stack, emit=view, trace=trace, cassette=session, question=question
            )
            run = holder["run"] = ResearchRun(question, deps, run_options(settings))
            return await run.run()

    def cut_short(status: Status, error: str | None) -> ResearchResult:
        """What was found so far; an empty result if the run had not started."""
        run = holder.get("run")
        if run is not None:
            return run.snapshot(status, error=error)
        return _empty_result(question, settings, status, error)

    view.start("starting")
    with signals_interrupt() as caught:
        try:
            result = asyncio.run(go())
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP
            result = cut_short("interrupted", None)
        except ConfigError as exc:
            view.stop()
            raise fail(str(exc), EXIT_USAGE) from None
        except OSError as exc:  # e.g. the trace file cannot be created
            where = exc.filename or (f"--trace {trace_path}" if trace_path else "a file")
            result = cut_short("failed", f"{where}: {exc.strerror or exc}")
        except DeepsearchError as exc:
            result = cut_short("failed", str(exc))
        except Exception as exc:  # a bug must still print what was found, not a traceback
            result = cut_short("failed", f"internal error: {type(exc).__name__}: {exc}")
        # Cut-short runs too: an interrupted recording still has its result.json.
        result = finish_cassette(sessions.get("cassette"), result)
        _report(result, view, as_json=as_json, quiet=quiet)
    if result.status == "interrupted":
        return caught.exit_code()
    return exit_code(result)


def _report(result: ResearchResult, view: LiveView, *, as_json: bool, quiet: bool) -> None:
    """The answer on stdout; the summary and the error on stderr."""
    from rich.markup import escape

    from deepsearch.commands.output import guarded_stdout, safe_result
    from deepsearch.commands.render import print_answer, summary_line

    view.stop()
    result = safe_result(result)  # no escape sequence from a source reaches a terminal
    with guarded_stdout():
        print_answer(result, as_json=as_json)
    if not quiet:
        view.console.print(f"[dim]{escape(summary_line(result))}[/]")
    if result.error and not as_json:
        view.console.print(f"[bold red]error:[/] {escape(result.error)}")


def exit_code(result: ResearchResult) -> int:
    """From the result's data: a configuration cause (rejected key, unknown model, search
    that cannot work) is 2 whatever was found; a run that could not go on is 1."""
    if result.error_kind == "configuration":
        return EXIT_USAGE
    if result.error_kind == "fatal":
        return EXIT_RUNTIME
    return STATUS_EXIT[result.status]


def _empty_result(
    question: str, settings: Settings, status: Status, error: str | None
) -> ResearchResult:
    from deepsearch.agent.result import ResearchResult, UsageReport, error_kind
    from deepsearch.llm.tracker import TokenTracker

    usage = UsageReport.from_tracker(TokenTracker(settings.agent.token_budget))  # nothing spent
    return ResearchResult(
        question=question,
        answer="",
        status=status,
        usage=usage,
        elapsed_s=0.0,
        error=error,
        error_kind=error_kind(None, error),
    )
