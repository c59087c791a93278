"""High effort's re-check, its rules: an answer the evaluator accepted is held against
a second, independent search (queries not run before) before it is final. Here: how
many re-checks a run may make, the replies the evaluator gives (the queries it
proposes, its verdict on what they found) and what a contradiction says.

The LLM calls and the contradiction recorded in the state are the loop's step
(agent/steps/recheck.py); the hook that runs a re-check after an accepted answer is
agent/hooks.py's. At most MAX_RECHECKS per run, so a question whose sources disagree
still ends.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MAX_RECHECKS = 2
MAX_QUERIES = 3
RESULTS_SHOWN = 15


class RecheckQueries(BaseModel):
    # built at first use: a typical run never validates one (issue 21)
    model_config = ConfigDict(defer_build=True)

    think: str = Field("", max_length=400)
    queries: list[str] = Field(default_factory=list, max_length=MAX_QUERIES)


class RecheckVerdict(BaseModel):
    # built at first use: a typical run never validates one (issue 21)
    model_config = ConfigDict(defer_build=True)

    think: str = Field("", max_length=600)
    consistent: bool = Field(description="false only if the results contradict a key claim")
    problem: str = Field("", max_length=600, description="what is contradicted, and how")

    def contradiction(self) -> str:
        """What the results contradict (the lesson kept in the knowledge)."""
        return self.problem or self.think


def rejection_line(problem: str) -> str:
    """The step log's line for an answer the re-check contradicted."""
    return f"answer rejected by the re-check: {problem[:200]}"
