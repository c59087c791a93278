"""One line on stderr per tool call, as `serve` logs each request: the call's number,
the run's status, tokens and seconds, the error kind if any; never the question (the
log of a shared server must not hold what its users asked)."""

from __future__ import annotations

import itertools
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepsearch.agent.result import ResearchResult

_numbers = itertools.count(1)


def call_line(result: ResearchResult | None, *, rejected: str = "") -> str:
    """`deepsearch mcp: call 3 status=answered tokens=12345 seconds=41.20`; a call whose
    arguments were refused before any run: `status=rejected (<why>)`."""
    head = f"deepsearch mcp: call {next(_numbers)}"
    if result is None:
        return f"{head} status=rejected ({rejected}) tokens=0 seconds=0.00"
    line = (
        f"{head} status={result.status} tokens={result.usage.total_tokens} "
        f"seconds={result.elapsed_s:.2f}"
    )
    return f"{line} error={result.error_kind}" if result.error_kind else line


def log_call(result: ResearchResult | None, *, rejected: str = "") -> None:
    try:
        print(call_line(result, rejected=rejected), file=sys.stderr, flush=True)
    except (OSError, ValueError):  # a closed stderr: the call's result still goes out
        pass
