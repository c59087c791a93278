"""The event stream of one reference run, compared to a checked-in snapshot.

The loop is being refactored (issue 9): what it emits, in what order, must not
change. Timings are dropped (they are the only non-deterministic field). To accept
a deliberate change, rerun with SNAPSHOT_UPDATE=1 and review the diff."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from deepsearch.agent.loop import ResearchRun
from deepsearch.llm.base import CompletionRequest
from tests.agent.helpers import CLASSIFY_SIMPLE, make_deps, options
from tests.fakes.scripted_llm import ToolQueues

SNAPSHOT = Path(__file__).resolve().parents[1] / "snapshots" / "reference_run_events.jsonl"
Q = "When was the Eiffel Tower completed?"
SEARCH = {"think": "look it up", "action": {"search": {"queries": ["eiffel tower completed"]}}}  # fmt: skip
VISIT = {"think": "read both", "action": {"visit": {"url_indices": [1, 2]}}}
REFLECT = {"think": "one gap", "action": {"reflect": {"questions": ["Which month was it finished?"]}}}  # fmt: skip
SUB_ANSWER = {"think": "the page says", "action": {"answer": {"answer": "In March 1889."}}}  # fmt: skip
THIN = {"think": "guess", "action": {"answer": {"answer": "Some time in the 1880s."}}}
FINAL = "It was completed in March 1889.\n\nIt was built for the World's Fair in Paris."
ANSWER = {"think": "done", "action": {"answer": {"answer": FINAL}}}
DEFINITIVE_OK = {"think": "a plain fact", "pass": True}
STRICT_NO = {"think": "too vague", "pass": False,
             "improvement_plan": "For the best answer, you must cite the year."}  # fmt: skip
STRICT_OK = {"think": "cited", "pass": True, "improvement_plan": ""}
ERROR_ANALYSIS = {"recap": "guessed", "blame": "no year", "improvement": "read the history page"}


def echo_draft(request: CompletionRequest) -> str:
    return request.messages[-1].content


def reference_script() -> ToolQueues:
    return ToolQueues(
        {
            "agent": [SEARCH, VISIT, THIN, REFLECT, SUB_ANSWER, ANSWER],
            "evaluator": [CLASSIFY_SIMPLE, DEFINITIVE_OK, STRICT_NO, DEFINITIVE_OK, STRICT_OK],
            "error_analyzer": [ERROR_ANALYSIS],
            "finalizer": [echo_draft],
        }
    )


def serialized(events: list[Any]) -> list[str]:
    lines = []
    for event in events:
        data = event.model_dump(mode="json")
        data.pop("elapsed_s", None)  # wall time: the only field that varies run to run
        lines.append(json.dumps(data, sort_keys=True, ensure_ascii=False))
    return lines


async def test_the_reference_run_emits_the_snapshotted_event_stream() -> None:
    script = reference_script()
    events: list[Any] = []
    deps, _ = make_deps(script, events=events)
    result = await ResearchRun(Q, deps, options()).run()
    script.assert_complete()
    assert result.status == "answered" and "March 1889" in result.answer
    got = serialized(events)
    if os.environ.get("SNAPSHOT_UPDATE") == "1":
        SNAPSHOT.write_text("\n".join(got) + "\n", encoding="utf-8")
    expected = SNAPSHOT.read_text(encoding="utf-8").splitlines()
    assert got == expected, "event stream changed; SNAPSHOT_UPDATE=1 rewrites the snapshot"
