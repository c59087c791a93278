"""What a run needs only after its first LLM request, imported while that request is
in flight (issue 21).

Until the first request leaves, the process does nothing but get it ready: the
interpreter, the command line, the configuration, the LLM client and the prompt.
Everything else the run imported before it (the action handlers, the evaluator's
checks, the citations, team mode, the re-check) sat on the critical path: ~0.05-0.1 s of
CPU on a quiet machine before any byte went out. Those modules are imported where
they are used (the loop's and dispatch's function-level imports, marked
"(later.py)"), and `start` imports them in a daemon thread once the first request
is on the wire (the loop calls it through `Prefetcher.behind`, as the prefetches):
the main thread waits on the socket meanwhile, so the thread's CPU costs no wall
time, and the handler the reply picks is ready when it arrives. A module a thread is
still importing is waited for by the import system itself (its module lock).

Only what this run can use is imported: team mode's modules with a team, the
re-check's with a re-check, the reflect handler when reflecting is on, the
citations when the run finalizes (a team child does not). The coding action's
(its sandbox child) is left to the first coding step, never on step 1 (gating.py).
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepsearch.agent.deps import RunOptions

# Every run's: the first reply's action (dispatch and its handlers), the evaluator's
# checks (the question's classification is asked beside step 1's action).
STEPS = (
    "deepsearch.agent.judging.evaluator",
    "deepsearch.agent.dispatch",
    "deepsearch.agent.actions.search",
    "deepsearch.agent.actions.visit",
    "deepsearch.agent.actions.answer",
)
REFLECT = ("deepsearch.agent.actions.reflect",)
FINALIZE = ("deepsearch.agent.citations.finalize", "deepsearch.agent.citations.references")
TEAM = (
    "deepsearch.agent.team.plan",
    "deepsearch.agent.team.budget",
    "deepsearch.agent.team.children",
    "deepsearch.agent.team.merge",
)
RECHECK = ("deepsearch.agent.judging.recheck", "deepsearch.agent.steps.recheck")

_LOCK = threading.Lock()
_STARTED: list[threading.Thread] = []  # the one thread of this process, once started


def modules_for(options: RunOptions) -> tuple[str, ...]:
    """The modules a run with these options may need after its first request."""
    names = [*STEPS]
    names += REFLECT if options.reflect else ()
    names += FINALIZE if options.finalize else ()
    names += TEAM if options.team_size > 1 else ()
    names += RECHECK if options.recheck else ()
    return tuple(names)


def import_all(names: tuple[str, ...]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: S112 - the step that needs it imports it again and reports
            continue


def start(options: RunOptions) -> None:
    """Import `modules_for(options)` in a daemon thread, once a process (serve's later
    runs, and a team's children, find them imported)."""
    with _LOCK:
        if _STARTED:
            return
        thread = threading.Thread(
            target=import_all, args=(modules_for(options),), name="later-imports", daemon=True
        )
        _STARTED.append(thread)
    thread.start()
