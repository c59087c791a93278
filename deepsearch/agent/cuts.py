"""What a prompt had to leave out, said where it can be read: a `knowledge_cut` record
in the --trace file for every prompt that left knowledge out (which items, and whether
a passage of the chain was among them), and a notice in the live view.

A passage that answered a hop (retrieval/focus.py) is shown whatever a page's share
(`PageEvidence.chain`) and its item comes first (`KnowledgeItem.pinned`), so the chain
is cut only when the allowance cannot hold even the chain: then the notice says so.
"""

from __future__ import annotations

from deepsearch.agent.context import select_knowledge
from deepsearch.agent.deps import AgentDeps
from deepsearch.agent.events import Notice, omitted_knowledge_notice, safe_emit
from deepsearch.agent.state import AgentState


def chain_cut_notice(count: int) -> Notice:
    return Notice(
        text=f"{count} page(s) of the chain no longer fit the model's context and were "
        "left out of the prompt",
        once="chain_cut",
    )


def report_cut(state: AgentState, deps: AgentDeps, allowance: int, tool: str) -> None:
    """Call when the prompt left knowledge out: the trace record and the notices."""
    safe_emit(deps.emit, omitted_knowledge_notice())
    kept, _ = select_knowledge(
        state.knowledge, state.current_question, allowance, current_step=state.step
    )
    shown = {item.id for item in kept}
    left = [item for item in state.knowledge if item.id not in shown]
    chain = [item for item in left if item.pinned]
    deps.llm.trace_note(
        "knowledge_cut",
        {
            "step": state.step,
            "tool": tool,
            "allowance_tokens": allowance,
            "left_out": [
                {"id": i.id, "type": i.type, "about": i.question[:80], "chain": i.pinned}
                for i in left
                if i.type != "side-info"
            ],
            "snippets_left_out": sum(1 for i in left if i.type == "side-info"),
            "chain_left_out": len(chain),
        },
    )
    if chain:
        safe_emit(deps.emit, chain_cut_notice(len(chain)))
