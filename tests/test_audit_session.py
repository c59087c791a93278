"""Outside mutation audit (issue 37): session behaviours no other test pinned. No
server: sessions are finished by hand."""

from __future__ import annotations

from pathlib import Path

from deepsearch.agent.result import ResearchResult
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


def test_a_follow_up_that_never_started_passes_on_what_it_was_given(tmp_path: Path) -> None:
    """A follow-up of a follow-up that failed before its run starts where that one
    would have: from the earlier run's knowledge and URL list."""
    from deepsearch.agent.handover import Carryover

    chosen = settings(**{"history.dir": str(tmp_path)})
    earlier = Carryover(
        run_id="20261201-000000-abcdef", question="Who built it?", answer="Ada.",
        queries=["who built the bridge"], failed_urls={"https://gone.example/": "http_status: 404"},
    )  # fmt: skip
    session = ResearchSession("And when?", chosen, earlier=earlier)
    session.finish(empty_result("And when?", chosen, "failed", "no provider"))
    carried = store_for(chosen).carryover(session.run_id)
    assert carried is not None
    assert carried.queries == ["who built the bridge"]
    assert carried.failed_urls == {"https://gone.example/": "http_status: 404"}


def test_the_history_keeps_the_result_as_the_front_end_printed_it(tmp_path: Path) -> None:
    """`deepsearch show` prints what the user saw (the CLI's cleaned answer), not the
    raw result."""
    import json

    chosen = settings(**{"history.dir": str(tmp_path)})

    def present(result: ResearchResult) -> ResearchResult:
        return result.model_copy(update={"answer": "As printed."})

    session = ResearchSession("Q?", chosen, present=present)
    session.finish(empty_result("Q?", chosen, "interrupted"))
    output = store_for(chosen).output(session.run_id)
    assert output is not None and json.loads(output)["answer"] == "As printed."


def test_only_a_lenient_replay_warns_of_another_questions_cassette(tmp_path: Path) -> None:
    """A strict replay of another question misses at once and says so itself: no
    second notice about the cassette."""
    from deepsearch.cassettes import Player
    from deepsearch.session import foreign_cassette

    (tmp_path / "run.json").write_text(
        '{"started_at": "2026-01-01T00:00:00+00:00", "question": "Capital of Peru?"}', "utf-8"
    )
    assert foreign_cassette(Player(tmp_path), "Capital of Chile?") is None
    lenient = foreign_cassette(Player(tmp_path, lenient=True), "Capital of Chile?")
    assert lenient is not None and "recorded for another question" in lenient
    assert foreign_cassette(Player(tmp_path, lenient=True), "Capital  of Peru?") is None
