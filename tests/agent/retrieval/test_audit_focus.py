"""Outside mutation audit (issue 37): where the research stands, behaviours no other
test pinned."""

from __future__ import annotations

from deepsearch.agent.retrieval.focus import Bridge, Focus


def test_the_evidence_choice_looks_for_the_newest_hops_bridges_only() -> None:
    """Past MAX_BRIDGES (40) learned terms, the oldest hop's terms drop out of the
    queries, never the newest's."""
    focus = Focus()
    focus.bridges["oldest"] = Bridge("oldest", "Oldest", "https://a.example/", 0, hop=1)
    for n in range(40):
        focus.bridges[f"new{n}"] = Bridge(f"new{n}", f"New{n}", "https://b.example/", 0, hop=2)
    focus.hops = 2
    queries = focus.hop_queries()
    assert len(queries) == 1
    assert "New39" in queries[0] and "Oldest" not in queries[0]
