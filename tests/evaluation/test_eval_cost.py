"""`deepsearch eval` reports what each question cost and the total (issue 34)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepsearch.evaluation.results import ResultLine
from deepsearch.evaluation.summary import summarize, summary_table
from tests.evaluation.helpers import Router, eval_args, run_eval, write_questions
from tests.evaluation.test_eval_cli import lines
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers


@pytest.mark.timeout(60)
def test_each_question_and_the_summary_carry_dollars(
    searx: FakeSearchServers,
    tmp_path: Path,
) -> None:
    priced = tmp_path / "c.json"
    price = {"model": "gpt-4o-mini", "input": 0.15, "output": 0.60}
    priced.write_text(json.dumps({"llm": {"prices": [price]}}), "utf-8")
    questions, out = write_questions(tmp_path / "q.jsonl"), tmp_path / "out"
    args = [str(questions), "--out", str(out), "--grader", "exact", "--config", str(priced)]
    with FakeOpenAIServer(Router(direct=True)) as llm:
        done = run_eval(llm, *args, *eval_args(searx))
    assert done.returncode == 0, done.stderr
    rows = lines(out / "results.jsonl")
    assert all(row["cost_usd"] > 0 for row in rows)
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["cost_total_usd"] == pytest.approx(sum(row["cost_usd"] for row in rows))
    assert 0 < summary["cost_median_usd"] < summary["cost_total_usd"]
    assert "cost median / total" in done.stdout


def test_one_unknown_cost_makes_the_total_unknown_never_zero() -> None:
    known = [ResultLine(id=str(i), question="q", gold="g", cost_usd=0.01 * i) for i in (1, 2, 3)]
    assert summarize(known).cost_total_usd == pytest.approx(0.06)
    assert summarize(known).cost_median_usd == pytest.approx(0.02)
    unknown = summarize([*known, ResultLine(id="x", question="q", gold="g", cost_usd=None)])
    assert unknown.cost_total_usd is None and unknown.cost_median_usd is None
    rows = {r[0]: r[1] for r in _rows(unknown)}
    assert rows["cost median / total"].startswith("unknown")


def _rows(summary: object) -> list[tuple[str, str]]:
    table = summary_table(summary)  # type: ignore[arg-type]
    names, values = (list(col.cells) for col in table.columns)
    return list(zip(names, values, strict=True))
