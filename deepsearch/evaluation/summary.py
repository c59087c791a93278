"""The eval's summary: SimpleQA's figures plus cost and time.

accuracy = correct / n; accuracy_given_attempted = correct / (correct + incorrect);
f_score = their harmonic mean (SimpleQA's F-score). Percentiles are nearest-rank.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from pydantic import BaseModel
from rich.table import Table

from deepsearch.evaluation.results import ResultLine

SUMMARY_FILE = "summary.json"


class Summary(BaseModel):
    n: int
    correct: int
    incorrect: int
    not_attempted: int
    errors: int
    failed: int = 0  # errors before any answer: run again by a resume
    accuracy: float
    accuracy_given_attempted: float
    f_score: float
    tokens_median: float
    tokens_p95: float
    tokens_total: int
    llm_calls_median: float
    wall_s_p50: float
    wall_s_p95: float
    # US dollars (docs/cost.md); null when a question's cost is unknown (no price).
    cost_median_usd: float | None = None
    cost_total_usd: float | None = None


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(share * len(ordered)) - 1)])


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def summarize(lines: Sequence[ResultLine]) -> Summary:
    grades = [line.grade for line in lines]
    correct, incorrect = grades.count("correct"), grades.count("incorrect")
    accuracy = _ratio(correct, len(lines))
    given = _ratio(correct, correct + incorrect)
    f_score = round(2 * accuracy * given / (accuracy + given), 4) if accuracy + given else 0.0
    tokens = [float(line.tokens) for line in lines]
    walls = [line.elapsed_s for line in lines]
    return Summary(
        n=len(lines),
        correct=correct,
        incorrect=incorrect,
        not_attempted=grades.count("not_attempted"),
        errors=sum(1 for line in lines if line.error),
        failed=sum(1 for line in lines if line.failed),
        accuracy=accuracy,
        accuracy_given_attempted=given,
        f_score=f_score,
        tokens_median=statistics.median(tokens) if tokens else 0.0,
        tokens_p95=percentile(tokens, 0.95),
        tokens_total=sum(line.tokens for line in lines),
        llm_calls_median=statistics.median([line.llm_calls for line in lines]) if lines else 0.0,
        wall_s_p50=percentile(walls, 0.5),
        wall_s_p95=percentile(walls, 0.95),
        **_costs(lines),
    )


def _costs(lines: Sequence[ResultLine]) -> dict[str, float | None]:
    """Median and total dollars of the questions; unknown (None) if one's is."""
    costs = [line.cost_usd for line in lines]
    known = [c for c in costs if c is not None]
    if not lines or len(known) < len(costs):
        return {"cost_median_usd": None, "cost_total_usd": None}
    return {"cost_median_usd": round(statistics.median(known), 8),
            "cost_total_usd": round(sum(known), 8)}  # fmt: skip


def _dollars(median: float | None, total: float | None) -> str:
    from deepsearch.llm.tracker import usd

    if median is None or total is None:
        return "unknown (a model has no price: llm.prices)"
    return f"{usd(median)} / {usd(total)}"


def summary_table(summary: Summary) -> Table:
    table = Table(title="deepsearch eval", show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("n", f"{summary.n}"),
        ("correct", f"{summary.correct}"),
        ("incorrect", f"{summary.incorrect}"),
        ("not attempted", f"{summary.not_attempted}"),
        ("accuracy", f"{summary.accuracy:.1%}"),
        ("accuracy when attempted", f"{summary.accuracy_given_attempted:.1%}"),
        ("F-score", f"{summary.f_score:.3f}"),
        ("tokens median / p95", f"{summary.tokens_median:,.0f} / {summary.tokens_p95:,.0f}"),
        ("tokens total", f"{summary.tokens_total:,}"),
        ("LLM calls median", f"{summary.llm_calls_median:g}"),
        ("wall time p50 / p95", f"{summary.wall_s_p50:.1f}s / {summary.wall_s_p95:.1f}s"),
        ("cost median / total", _dollars(summary.cost_median_usd, summary.cost_total_usd)),
    ]
    if summary.errors:
        rows.append(("errors (graded not attempted)", f"{summary.errors}"))
    if summary.failed:
        rows.append(("failed before any answer (re-run on resume)", f"{summary.failed}"))
    for name, value in rows:
        table.add_row(name, value)
    return table
