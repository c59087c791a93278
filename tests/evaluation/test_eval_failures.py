"""An eval that fails says so (issue 36, item 1): every question failed before an
answer (a dead search endpoint) is exit 1, not "accuracy 0%"; the same command then
runs those questions again (a wrong answer is a result and is not re-run);
`--replay-from` a folder holding none of the questions is one line, exit 2; `--merge`
says which shards are missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepsearch.evaluation.manifest import MANIFEST_FILE
from deepsearch.evaluation.results import ResultLine
from deepsearch.evaluation.summary import summarize
from tests.evaluation.helpers import (
    Router,
    eval_args,
    run_eval,
    run_offline,
    write_questions,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.llm.test_ping import closed_port_url


@pytest.fixture
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    from deepsearch.web.search import chain
    from tests.fakes.clock import FakeClock

    clock = FakeClock()  # the chain's pause before its second try: not waited
    monkeypatch.setattr(chain, "SystemClock", lambda: clock)


@pytest.mark.timeout(60)
def test_an_eval_where_every_question_failed_exits_1_and_its_resume_runs_them_again(
    searx: FakeSearchServers, tmp_path: Path, no_pause: None
) -> None:
    questions, out = write_questions(tmp_path / "q.jsonl", n=2), tmp_path / "out"
    common = [str(questions), "--out", str(out), "--grader", "exact"]
    dead = eval_args(searx)
    dead[dead.index("--searxng-url") + 1] = closed_port_url()
    with FakeOpenAIServer(Router()) as llm:
        failed = run_eval(llm, *common, *dead)
    assert failed.returncode == 1, failed.stderr
    assert "every question failed (2 of 2" in failed.stderr and "search is not working" in (
        failed.stderr
    )
    assert "run the same command again" in failed.stderr
    assert json.loads((out / "summary.json").read_text("utf-8"))["failed"] == 2

    with FakeOpenAIServer(again := Router(direct=True)) as llm:
        resumed = run_eval(llm, *common, *eval_args(searx))
    assert resumed.returncode == 0, resumed.stderr
    assert len(again.steps) == 2, "both failed questions ran again"
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert (summary["n"], summary["correct"], summary["failed"]) == (2, 2, 0)


def test_replay_from_a_folder_without_these_questions_is_one_line_exit_2(
    tmp_path: Path,
) -> None:
    questions = write_questions(tmp_path / "q.jsonl", n=3)
    (tmp_path / "other" / "cassettes" / "zz").mkdir(parents=True)
    done = run_offline(str(questions), "--out", str(tmp_path / "re"), "--quiet",
                       "--replay-from", str(tmp_path / "other"))  # fmt: skip
    assert done.returncode == 2 and not done.stdout
    assert "no cassette for any of these 3 questions" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def _shard_folder(path: Path, index: int, count: int, ids: list[str]) -> Path:
    path.mkdir()
    rows = [ResultLine(id=i, question="q", gold="g", answer="g", status="answered",
                       grade="correct") for i in ids]  # fmt: skip
    text = "".join(row.model_dump_json() + "\n" for row in rows)
    (path / "results.jsonl").write_text(text, "utf-8")
    manifest = {"shard": [index, count], "questions": 6, "ids": ids}
    (path / MANIFEST_FILE).write_text(json.dumps(manifest), "utf-8")
    return path


def test_merge_names_the_missing_shards_and_unfinished_questions(tmp_path: Path) -> None:
    first = _shard_folder(tmp_path / "s0", 0, 3, ["a", "d"])
    last = _shard_folder(tmp_path / "s2", 2, 3, ["c", "f"])
    manifest = json.loads((last / MANIFEST_FILE).read_text("utf-8"))
    (last / MANIFEST_FILE).write_text(json.dumps({**manifest, "ids": ["c", "f", "x"]}), "utf-8")
    merged = run_offline("--merge", str(first), str(last), "--json")
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["n"] == 4
    assert "shards missing: 1/3" in merged.stderr
    assert "1 question of the given folders without a result yet" in merged.stderr


def test_a_partial_failure_is_counted_apart_from_wrong_answers() -> None:
    lines = [
        ResultLine(id="a", question="q", gold="g", answer="x", grade="incorrect"),
        ResultLine(id="b", question="q", gold="g", error="SearchError: dead"),
        ResultLine(id="c", question="q", gold="g", answer="g", error="grader: 500"),
    ]
    assert [line.failed for line in lines] == [False, True, False]
    assert summarize(lines).failed == 1


def test_a_second_eval_on_the_same_folder_is_refused(tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl")
    from deepsearch.evaluation.lock import LOCK_FILE

    questions, out = write_questions(tmp_path / "q.jsonl", n=2), tmp_path / "out"
    out.mkdir()
    with open(out / LOCK_FILE, "w") as held:  # the first eval, still running
        held.write("4242")
        held.flush()
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = run_offline(str(questions), "--out", str(out), "--quiet")
    assert done.returncode == 2 and not (out / "results.jsonl").exists()
    assert f"{out}: another deepsearch eval is running on this folder (process 4242)" in (
        done.stderr
    )
