"""Beast Mode's knowledge cap, reached through the loop: with little budget left its
prompt carries only the knowledge that leaves room for the answer (half of what is
left, less the prompt around it), not the share a research step may show."""

from __future__ import annotations

import json
import re
from typing import Any

from deepsearch.agent.context import BEAST_PROMPT_TOKENS, item_tokens
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.types import KnowledgeItem
from deepsearch.llm.base import Completion, CompletionRequest, Usage
from tests.agent.helpers import evaluator_reply, make_deps, options

Q = "When was the Eiffel Tower completed?"
SEARCH = {"think": "look", "action": {"search": {"queries": ["eiffel tower"]}}}
ANSWER = {"think": "enough", "action": {"answer": {"answer": "It was completed in 1889."}}}
BUDGET = 60_000  # a research step may show max(4000, 60000 // 12) = 5000 tokens of knowledge
SHOWN = re.compile(r"<knowledge-(\d+) ")


async def test_beast_mode_shows_only_the_knowledge_its_room_allows() -> None:
    beast_rooms: list[int] = []
    run: ResearchRun

    def reply(request: CompletionRequest) -> Any:
        if request.tool == "agent":  # one costly step: the budget is then almost spent
            return Completion(
                text=json.dumps(SEARCH),
                usage=Usage(prompt_tokens=0, completion_tokens=50_000),  # a long reply
                mode="json_schema",
            )
        if request.tool == "agent_beast":
            beast_rooms.append(run.deps.llm.tracker.beast_room(BEAST_PROMPT_TOKENS))
            return ANSWER
        return evaluator_reply(request)

    deps, provider = make_deps(reply, budget=BUDGET)
    run = ResearchRun(Q, deps, options(max_steps=5))
    for i in range(1, 31):  # ~6000 tokens: more than any allowance here
        words = " ".join(f"fact{i}-{n} about the tower" for n in range(25))
        run.state.add_knowledge(KnowledgeItem(question=f"Note {i} on {Q}", answer=words, type="qa"))
    result = await run.run()

    assert result.status == "forced" and "1889" in result.answer
    [room] = beast_rooms
    assert 200 < room < 5000, "the cap must bind below a research step's allowance"
    [agent], [beast] = provider.calls_for("agent"), provider.calls_for("agent_beast")
    shown = [run.state.knowledge[int(n) - 1] for n in SHOWN.findall(beast.system or "")]
    assert shown, "Beast Mode still sees what fits"
    assert sum(item_tokens(item) for item in shown) <= room
    assert len(shown) < len(SHOWN.findall(agent.system or ""))
