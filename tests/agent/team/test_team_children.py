"""A team child's dependencies: every call it makes is charged to its share."""

from __future__ import annotations

from deepsearch.agent.steps.rewrite import make_query_rewriter
from deepsearch.agent.team.children import child_deps
from tests.agent.helpers import make_deps, router

Q = "What was the population of Beta in 2020?"


async def test_a_childs_query_rewriting_is_charged_to_its_share() -> None:
    parent, provider = make_deps(router([]))
    parent.rewrite_queries = make_query_rewriter(parent.llm, parent.similarity)
    child = child_deps(parent, "1", 20_000)
    assert child.rewrite_queries is not None
    await child.rewrite_queries(Q, ["beta population"], [], False)
    assert [c.tool for c in provider.calls] == ["query_rewriter"]
    rewriting = child.llm.tracker.by_tool().get("query_rewriter")
    assert rewriting is not None and rewriting.calls == 1, "the child's share paid for it"
    assert 0 < child.llm.tracker.used == parent.llm.tracker.used  # and the parent's total
