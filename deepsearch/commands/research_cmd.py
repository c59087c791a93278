"""`deepsearch "question"`: placeholder until the agent loop lands."""

from __future__ import annotations

from deepsearch.cli import EXIT_RUNTIME, fail

HELP = "Research a question and print one cited answer."


def research(question: str) -> None:
    raise fail("the research command is not implemented yet", EXIT_RUNTIME)
