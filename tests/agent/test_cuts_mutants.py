"""What a prompt left out (agent/cuts.py), as the --trace file and the live view say it
(docs/chain.md): the whole `knowledge_cut` record, and the notices' words (issue 37)."""

from __future__ import annotations

from typing import Any

from deepsearch.agent.cuts import report_cut
from deepsearch.agent.events import Notice
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from tests.agent.helpers import make_deps, router

FILLER = "Carts crossed the river here daily, and the market drew traders from far away. " * 5
LONG = "Which mason " + "and which apprentice " * 6 + "built the Harlow Mill Bridge?"


def cut(allowance: int) -> tuple[dict[str, Any], list[Notice]]:
    records: list[tuple[str, dict[str, Any]]] = []
    events: list[Any] = []
    deps, _ = make_deps(router([]), events=events)
    deps.llm._trace = lambda kind, payload: records.append((kind, payload))  # the --trace tap
    state = AgentState.start("Who built the Harlow Mill Bridge?")
    state.step = 3
    items = [
        KnowledgeItem(question="results: harlow", answer=FILLER, type="side-info"),
        KnowledgeItem(question=LONG, answer=FILLER, type="url", pinned=True),
        KnowledgeItem(question="page 2", answer=FILLER, type="url", pinned=True),
        KnowledgeItem(question="results: mill", answer=FILLER, type="side-info"),
        KnowledgeItem(question="computed", answer=FILLER, type="coding"),
    ]
    for item in items:
        state.add_knowledge(item)
    report_cut(state, deps, allowance=allowance, tool="agent")
    [(kind, record)] = records
    assert kind == "knowledge_cut"
    return record, [e for e in events if isinstance(e, Notice)]


def test_a_prompt_that_left_out_the_chain_is_written_whole_to_the_trace_and_said() -> None:
    record, notices = cut(allowance=1)  # nothing fits
    assert record == {
        "step": 3,
        "tool": "agent",
        "allowance_tokens": 1,
        "left_out": [
            {"id": 2, "type": "url", "about": LONG[:80], "chain": True},
            {"id": 3, "type": "url", "about": "page 2", "chain": True},
            {"id": 5, "type": "coding", "about": "computed", "chain": False},
        ],
        "snippets_left_out": 2,
        "chain_left_out": 2,
    }
    assert [(n.text, n.once) for n in notices] == [
        (
            "the evidence found no longer all fits the model's context: the least relevant "
            "is left out of the prompt",
            "omitted_knowledge",
        ),
        (
            "2 page(s) of the chain no longer fit the model's context and were left out of "
            "the prompt",
            "chain_cut",
        ),
    ]


def test_a_view_that_fails_never_breaks_the_run() -> None:
    deps, _ = make_deps(router([]))

    def broken(event: Any) -> None:
        raise OSError("the terminal is gone")

    deps.emit = broken
    state = AgentState.start("Who built the Harlow Mill Bridge?")
    state.add_knowledge(KnowledgeItem(question="p", answer=FILLER, type="url", pinned=True))
    report_cut(state, deps, allowance=1, tool="agent")  # raises nothing
