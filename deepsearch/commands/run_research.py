"""Running one research and reporting it: the live view, signals, the answer on
stdout, the summary and error on stderr, and the exit code from the result's data."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepsearch.agent.loop import ResearchRun
    from deepsearch.agent.result import ResearchResult, Status
    from deepsearch.cassettes import CassetteSpec
    from deepsearch.commands.live import LiveView
    from deepsearch.config import Settings
    from deepsearch.runtime import CassetteSession


def run_research(
    question: str,
    settings: Settings,
    *,
    as_json: bool,
    quiet: bool,
    trace_path: Path | None,
    cassette: CassetteSpec | None = None,
) -> int:
    """Run, report, and the exit code: the result's, or the signal's when interrupted.
    A configuration that cannot work (no provider) is a ConfigError for the CLI."""
    from deepsearch.commands.live import LiveView
    from deepsearch.commands.signals import signals_interrupt
    from deepsearch.runtime import finish_cassette

    view = LiveView(quiet=quiet)
    attempt = _Attempt(question, settings, view, trace_path, cassette)
    view.start("starting")
    with signals_interrupt() as caught:
        try:
            result = attempt.result()
        finally:
            view.stop()  # before any line on stderr, the error's included
        # Cut-short runs too: an interrupted recording still has its result.json.
        result = finish_cassette(attempt.session, result)
        _report(result, view, as_json=as_json, quiet=quiet)
    return caught.exit_code() if result.status == "interrupted" else result.exit_code


class _Attempt:
    """One research attempt and what it got to: the run (once built) for a snapshot of
    what was found when it is cut short, the cassette session (once opened)."""

    def __init__(
        self,
        question: str,
        settings: Settings,
        view: LiveView,
        trace_path: Path | None,
        cassette: CassetteSpec | None,
    ) -> None:
        self.question, self.settings, self.view = question, settings, view
        self.trace_path, self.cassette = trace_path, cassette
        self.run: ResearchRun | None = None
        self.session: CassetteSession | None = None

    def result(self) -> ResearchResult:
        """The run's result; a run error or an interruption becomes a cut-short one."""
        from deepsearch.errors import ConfigError, RunError

        try:
            return asyncio.run(self._go())
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP
            return self._cut_short("interrupted", None)
        except OSError as exc:  # e.g. the trace file cannot be created
            where = exc.filename or (f"--trace {self.trace_path}" if self.trace_path else "a file")
            return self._cut_short("failed", f"{where}: {exc.strerror or exc}")
        except RunError as exc:
            return self._cut_short("failed", str(exc))
        except ConfigError:
            raise  # not the run's (no provider, say): the CLI prints it, exit 2
        except Exception as exc:  # a bug must still print what was found, not a traceback
            return self._cut_short("failed", f"internal error: {type(exc).__name__}: {exc}")

    async def _go(self) -> ResearchResult:
        from deepsearch.agent.loop import ResearchRun
        from deepsearch.runtime import build_deps, build_trace, open_cassette, run_options

        settings, question = self.settings, self.question
        trace = build_trace(self.trace_path, settings, question)
        async with AsyncExitStack() as stack:
            if trace is not None:
                stack.callback(trace.close)
            self.session = open_cassette(self.cassette, settings)
            deps = await build_deps(
                settings, stack=stack, emit=self.view, trace=trace, cassette=self.session,
                question=question,
            )  # fmt: skip
            self.run = ResearchRun(question, deps, run_options(settings))
            return await self.run.run()

    def _cut_short(self, status: Status, error: str | None) -> ResearchResult:
        """What was found so far; an empty result if the run had not started."""
        if self.run is not None:
            return self.run.snapshot(status, error=error)
        return _empty_result(self.question, self.settings, status, error)


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
