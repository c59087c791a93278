"""The console-script entry point: run the command line, flush, and leave at once.

A finished run has printed its answer; what is left is the interpreter's teardown:
freeing every module and object (the openai SDK's types, lxml, a 200k-entry token
vocabulary) and joining whatever threads remain. That took 0.45 s on a quiet machine
and 1.7-3.1 s under load, after the answer was out (issue 21). Every file the
commands write is closed by then (traces, cassettes, eval results, the cache's
committed SQLite rows), so the process flushes its standard streams and exits
without the teardown. In-process callers (the tests) use `deepsearch.cli.main`,
which raises SystemExit as usual.

httpx's package imports its command-line tool (`httpx._main`: click, rich and
pygments, ~0.15 s of CPU) when those are installed, and falls back to a stub that
says "install httpx[cli]" when they are not. deepsearch never runs that tool, so the
console script marks the module absent before anything imports httpx: a `--json
--quiet` run imports no rich at all, and a rendered one only the rich it renders with.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """Flush stdout and stderr, then end the process with `code`, skipping teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed, or None (`>&-`): no more
            pass
    os._exit(code)


def skip_httpx_cli() -> None:
    """Make `import httpx` take its no-CLI branch in this process (see above). A None
    in sys.modules is the import system's own "this module is absent" marker."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def main() -> NoReturn:
    from deepsearch import collector

    collector.hold()  # until the run's parts are built (session: collector.settle)
    skip_httpx_cli()
    try:
        from deepsearch.cli import run

        code = run(list(sys.argv[1:]))
    except KeyboardInterrupt:
        # Ctrl-C before the run's own handler is installed (while the modules load):
        # nothing was asked or printed yet, so no partial result, and no traceback.
        code = 130
    exit_now(code)
