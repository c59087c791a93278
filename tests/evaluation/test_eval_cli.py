"""`deepsearch eval` end to end (in process) against the loopback fakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evaluation.helpers import (
    LEAK,
    NOT_FOUND,
    SECRET,
    WRONG,
    Router,
    eval_args,
    run_eval,
    run_offline,
    write_questions,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text("utf-8").splitlines()]


@pytest.mark.timeout(60)
def test_exact_eval_writes_results_resumes_after_a_kill_and_summarizes(
    searx: FakeSearchServers, tmp_path: Path
) -> None:
    questions, out = write_questions(tmp_path / "q.jsonl"), tmp_path / "out"
    args = [str(questions), "--out", str(out), "--grader", "exact", *eval_args(searx)]
    with FakeOpenAIServer(Router(direct=True)) as llm:
        done = run_eval(llm, *args)
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in lines(out / "results.jsonl")}
    assert len(rows) == 5
    assert rows["c01"]["grade"] == "correct" and rows[WRONG]["grade"] == "incorrect"
    assert rows[NOT_FOUND]["status"] == "not_found"
    assert rows[NOT_FOUND]["grade"] == "not_attempted"
    fields = {"id", "question", "gold", "answer", "status", "grade", "confidence", "tokens",
              "llm_calls", "elapsed_s", "references", "error"}  # fmt: skip
    assert fields <= set(rows["c01"])
    assert rows["c01"]["tokens"] > 0 and rows["c01"]["llm_calls"] >= 2
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert (summary["n"], summary["correct"], summary["incorrect"]) == (5, 3, 1)
    assert summary["not_attempted"] == 1 and summary["accuracy"] == 0.6
    assert summary["accuracy_given_attempted"] == round(3 / 4, 4)
    assert summary["f_score"] == round(2 * 0.6 * (3 / 4) / (0.6 + 3 / 4), 4)
    assert "accuracy when attempted" in done.stdout and "F-score" in done.stdout
    assert all((out / "cassettes" / qid / "run.json").is_file() for qid in rows)
    assert SECRET not in (out / "cassettes" / "c01" / "llm.jsonl").read_text("utf-8")
    assert not any(LEAK in json.dumps(r.body) for r in llm.chat_requests), "answer key leaked"

    # A kill mid-write: two whole lines and half of the third.
    text = (out / "results.jsonl").read_text("utf-8").splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(text[:2]) + text[2][:25], "utf-8")
    with FakeOpenAIServer(again := Router(direct=True)) as llm:
        resumed = run_eval(llm, *args)
    assert resumed.returncode == 0, resumed.stderr
    assert len(again.steps) == 3, "only the three unfinished questions run again"
    after = lines(out / "results.jsonl")
    assert len(after) == 5 and len({row["id"] for row in after}) == 5
    assert json.loads((out / "summary.json").read_text("utf-8"))["correct"] == 3


@pytest.mark.timeout(60)
def test_llm_grader_shards_merge_and_replay(searx: FakeSearchServers, tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl")
    with FakeOpenAIServer(router := Router(direct=True)) as llm:
        for i in (0, 1):
            done = run_eval(llm, str(questions), "--out", str(tmp_path / f"s{i}"),
                            "--shard", f"{i}/2", *eval_args(searx))  # fmt: skip
            assert done.returncode == 0, done.stderr
    shard_ids = [{r["id"] for r in lines(tmp_path / f"s{i}" / "results.jsonl")} for i in (0, 1)]
    assert shard_ids == [{"c01", "c03", "c05"}, {"c02", "c04"}], "every other id, in id order"
    assert sorted(router.graded) == sorted(f"City{i}" for i in range(1, 6) if i != 5), (
        "the LLM grader judged every attempted answer, never the not-found one"
    )
    merged = run_offline("--merge", str(tmp_path / "s0"), str(tmp_path / "s1"),
                      "--out", str(tmp_path / "all"), "--json")  # fmt: skip
    assert merged.returncode == 0, merged.stderr
    summary = json.loads(merged.stdout)
    assert (summary["n"], summary["correct"], summary["not_attempted"]) == (5, 3, 1)

    # Re-scoring from the cassettes: no LLM server, no key, no search at all.
    searches = len(searx.requests)
    done = run_offline(str(questions), "--out", str(tmp_path / "re"), "--shard", "0/2",
                    "--replay-from", str(tmp_path / "s0"), *eval_args(searx))  # fmt: skip
    assert done.returncode == 0, done.stderr
    before = {r["id"]: r for r in lines(tmp_path / "s0" / "results.jsonl")}
    for row in lines(tmp_path / "re" / "results.jsonl"):
        assert (row["answer"], row["grade"]) == (
            before[row["id"]]["answer"],
            before[row["id"]]["grade"],
        )
    assert len(searx.requests) == searches


@pytest.mark.timeout(60)
def test_replay_from_an_exact_eval_asks_the_llm_grader(
    searx: FakeSearchServers, tmp_path: Path
) -> None:
    """An exact grade is not an LLM grade: re-scoring an exact eval with `--grader llm`
    asks the grader for every attempted answer (only LLM grades are reused)."""
    questions = write_questions(tmp_path / "q.jsonl", n=3)
    with FakeOpenAIServer(Router(direct=True)) as llm:
        done = run_eval(llm, str(questions), "--out", str(tmp_path / "exact"),
                        "--grader", "exact", *eval_args(searx))  # fmt: skip
        assert done.returncode == 0, done.stderr
    with FakeOpenAIServer(grader := Router(direct=True)) as llm:
        done = run_eval(llm, str(questions), "--out", str(tmp_path / "llm"), "--grader", "llm",
                        "--replay-from", str(tmp_path / "exact"), *eval_args(searx))  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert sorted(grader.graded) == ["City1", "City2", "City3"]
    assert not grader.steps, "the runs themselves were replayed"
    rows = lines(tmp_path / "llm" / "results.jsonl")
    assert {(row["grader"], row["grade"]) for row in rows} == {("llm", "correct")}


@pytest.mark.timeout(60)
def test_answer_key_hosts_are_blocked_unless_allowed(
    searx: FakeSearchServers, tmp_path: Path
) -> None:
    questions = write_questions(tmp_path / "q.jsonl", n=1)
    seen: dict[str, list[str]] = {}
    for name, extra in (("blocked", []), ("allowed", ["--allow-answer-key-hosts"])):
        with FakeOpenAIServer(Router()) as llm:
            done = run_eval(llm, str(questions), "--out", str(tmp_path / name), "--grader",
                            "exact", *extra, *eval_args(searx))  # fmt: skip
            assert done.returncode == 0, done.stderr
            seen[name] = [json.dumps(r.body) for r in llm.chat_requests]
    assert not any(LEAK in body or "huggingface.co" in body for body in seen["blocked"])
    assert any("huggingface.co" in body for body in seen["allowed"])
    assert any(LEAK in body for body in seen["allowed"]), "the leak is visible when allowed"


@pytest.mark.timeout(90)  # a hang; one by one, three holds of 10 s fail the assert
def test_questions_run_concurrently_up_to_the_limit(
    searx: FakeSearchServers, tmp_path: Path
) -> None:
    questions = write_questions(tmp_path / "q.jsonl", n=3)
    seen = {}
    # At 3 each step waits for all three (one at a time, each would wait out its hold);
    # at 1 the first lasts a moment, so steps sent with it would be seen together.
    for limit, router in (("3", Router(direct=True, together=3)),
                          ("1", Router(direct=True, delay_s=0.25))):  # fmt: skip
        with FakeOpenAIServer(router) as llm:
            done = run_eval(llm, str(questions), "--out", str(tmp_path / limit), "--grader",
                            "exact", "--concurrency", limit, *eval_args(searx))  # fmt: skip
            assert done.returncode == 0, done.stderr
        seen[limit] = router.peak
    assert seen == {"3": 3, "1": 1}, seen


def test_a_csv_in_simpleqa_columns_runs_with_stable_ids(
    searx: FakeSearchServers, tmp_path: Path
) -> None:
    csv = tmp_path / "simple_qa.csv"
    csv.write_text(
        'metadata,problem,answer\n"{}",What is the capital of Country3?,City3\n', "utf-8"
    )
    with FakeOpenAIServer(Router(direct=True)) as llm:
        for out in ("x", "y"):
            done = run_eval(llm, str(csv), "--out", str(tmp_path / out), "--grader", "exact",
                            *eval_args(searx))  # fmt: skip
            assert done.returncode == 0, done.stderr
    x, y = lines(tmp_path / "x" / "results.jsonl"), lines(tmp_path / "y" / "results.jsonl")
    assert x[0]["id"] == y[0]["id"] and x[0]["id"].startswith("q")
    assert x[0]["grade"] == "correct" and x[0]["gold"] == "City3"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "o"], "usage: deepsearch eval FILE"),
        (["missing.jsonl", "--out", "o"], "cannot read the questions"),
        (["q.jsonl", "--out", "o", "--grader", "vibes"], "expected llm or exact"),
        (["q.jsonl", "--out", "o", "--shard", "2/2"], "0 <= I < N"),
        (["q.jsonl", "--out", "o", "--trace", "t.jsonl"], "--trace does not apply"),
        (["--merge", "nowhere"], "no results.jsonl there"),
    ],
)
def test_bad_eval_input_is_one_line_exit_2(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_questions(tmp_path / "q.jsonl", n=2)
    from tests.cli.test_config_and_doctor import run_in_process

    done = run_in_process("eval", *args, "--llm-provider", "openai")
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_missing_key_stops_the_eval_with_exit_2_and_no_lines(tmp_path: Path) -> None:
    from tests.cli.test_config_and_doctor import run_in_process

    questions = write_questions(tmp_path / "q.jsonl", n=3)
    done = run_in_process("eval", str(questions), "--out", str(tmp_path / "o"),
                          "--llm-provider", "openai", "--quiet")  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "OPENAI_API_KEY" in done.stderr and "Traceback" not in done.stderr
    results = tmp_path / "o" / "results.jsonl"
    assert not results.exists() or results.read_text("utf-8") == ""
