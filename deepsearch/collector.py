"""The garbage collector while the console script starts (issue 21).

Loading the modules a run needs allocates several hundred thousand objects that live
as long as the process (classes, functions, pydantic validators, the configuration).
At the collector's default thresholds that start-up pays for a full collection of the
growing heap again and again, ~0.1 s of CPU before the first LLM request, none of
which frees anything. So the console script collects rarely while the modules load
(`hold`); once a run's parts are built (`settle`, before its first LLM request),
the start-up objects are frozen, moved out of every later collection's scan for good
(`gc.freeze`), and the thresholds are the interpreter's again, for the rest of a run
and for a long-lived `serve`. A process that never called `hold` (the library, the
tests) is left as it is.
"""

from __future__ import annotations

import gc

# A young-generation collection every 100k net allocations instead of 700; the older
# generations rarer still: a start-up then runs a few cheap collections, no full one.
START_THRESHOLD = (100_000, 50, 100)
_saved: list[tuple[int, int, int]] = []


def hold() -> None:
    """Collect rarely until `settle` (once a process; a second call does nothing)."""
    if not _saved:
        _saved.append(gc.get_threshold())
        gc.set_threshold(*START_THRESHOLD)


def settle() -> None:
    """Start-up is over: freeze what it built and restore the thresholds `hold` found.
    Nothing when `hold` was not called (or `settle` already was)."""
    if _saved:
        gc.freeze()
        gc.set_threshold(*_saved.pop())
