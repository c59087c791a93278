"""Outside mutation audit (issue 37): session behaviours no other test pinned. No
server: sessions are finished by hand."""

from __future__ import annotations

from pathlib import Path

from deepsearch.history import store_for
from deepsearch.session import ResearchSession, empty_result
from tests.test_session import settings


def test_a_session_told_not_to_keep_its_run_leaves_the_history_alone(tmp_path: Path) -> None:
    """eval's runs (keep=False) are not the user's research: never in the history."""
    chosen = settings(**{"history.dir": str(tmp_path)})
    kept = ResearchSession("Kept?", chosen)
    kept.finish(empty_result("Kept?", chosen, "interrupted"))
    skipped = ResearchSession("Skipped?", chosen, keep=False)
    skipped.finish(empty_result("Skipped?", chosen, "interrupted"))
    assert store_for(chosen).latest_id() == kept.run_id
    assert [run.run_id for run in store_for(chosen).runs()] == [kept.run_id]
