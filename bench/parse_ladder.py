"""Parse-ladder benchmark: our ladder vs json_repair alone vs hjson alone.

Cases: ../shared/data/json_repair_cases/*.jsonl (the test suites of jsonrepair and
json_repair, 645 cases). Each case has an `input` and either an `expected` repaired
JSON string / object (compared as parsed VALUES, not strings) or `expected_kind:
"error"` (a must-fail case: accepting any value counts as a failure). An expected
empty string means "nothing recoverable": a parser passes by producing no value.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT.parent / "shared" / "data" / "json_repair_cases"
NOTHING = object()  # "the parser produced no value"


class Case:
    def __init__(self, row: dict[str, Any]) -> None:
        self.id: str = row["id"]
        self.input: str = row["input"]
        self.must_fail = row["expected_kind"] == "error"
        self.expected: Any = NOTHING
        if not self.must_fail:
            raw = row["expected"]
            if row["expected_kind"] == "string":
                self.expected = NOTHING if raw == "" else json.loads(raw)
            else:
                self.expected = NOTHING if raw == "" else raw


def load_cases(directory: Path = CASES_DIR) -> list[Case]:
    cases: list[Case] = []
    for path in sorted(directory.glob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            cases += [Case(json.loads(line)) for line in handle if line.strip()]
    return cases


def _same(a: Any, b: Any) -> bool:
    """Value equality; numbers compare numerically, NaN equals NaN, bool is not int."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return (math.isnan(a) and math.isnan(b)) if (a != a or b != b) else a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _ours(text: str) -> Any:
    from deepsearch.llm.parse import ParseFailure, parse_json_lenient

    try:
        return parse_json_lenient(text, require_object=False)
    except ParseFailure:
        return NOTHING


def _json_repair(text: str) -> Any:
    import json_repair

    value = json_repair.loads(text)
    # json_repair signals "nothing found" with an empty string
    return NOTHING if value == "" and text.strip() not in ('""', "''") else value


def _hjson(text: str) -> Any:
    import hjson

    return hjson.loads(text)


PARSERS: dict[str, Callable[[str], Any]] = {
    "deepsearch ladder": _ours,
    "json_repair alone": _json_repair,
    "hjson alone": _hjson,
}


def score(parser: Callable[[str], Any], case: Case) -> tuple[bool, bool]:
    """(passed, accepted a must-fail case)."""
    try:
        value = parser(case.input)
    except Exception:  # a library raising is its way of saying "no value"
        value = NOTHING
    if case.must_fail:
        return value is NOTHING, value is not NOTHING
    if case.expected is NOTHING:
        return value is NOTHING, False
    return value is not NOTHING and _same(value, case.expected), False


def evaluate(cases: list[Case]) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for name, parser in PARSERS.items():
        started = time.perf_counter()
        passed = accepted = 0
        failures: list[str] = []
        for case in cases:
            ok, bad_accept = score(parser, case)
            passed += ok
            accepted += bad_accept
            if not ok:
                failures.append(case.id)
        elapsed = time.perf_counter() - started
        results[name] = {
            "passed": passed,
            "must_fail_accepted": accepted,
            "failures": failures,
            "us_per_case": elapsed / max(1, len(cases)) * 1e6,
        }
    return results


# The ladder's score before issue 8 (fences closed at any ``` inside a string;
# repairs could invent a value for an unfinished key), for the before/after line.
BEFORE_ISSUE_8 = 482


def refused_unfinished(cases: list[Case]) -> list[str]:
    """Cases whose expected repair invents a value for a key the input never
    finished (`{"a": }`, `{"a":`): the ladder refuses them on purpose."""
    from deepsearch.llm.parse import ParseFailure, parse_json_lenient

    refused = []
    for case in cases:
        if case.must_fail or case.expected is NOTHING:
            continue
        try:
            parse_json_lenient(case.input, require_object=False)
        except ParseFailure as exc:
            if "before the value of key" in str(exc):
                refused.append(case.id)
    return refused


def run() -> str:
    command = "`.venv/bin/python -m bench parse_ladder`"
    if not CASES_DIR.is_dir():
        return (
            "## Parse ladder\n\nSkipped: ../shared/data/json_repair_cases is not present. "
            f"Reproduce with {command} next to ../shared.\n"
        )
    cases = load_cases()
    results = evaluate(cases)
    must_fail = sum(c.must_fail for c in cases)
    best_single = max(results["json_repair alone"]["passed"], results["hjson alone"]["passed"])
    ours = results["deepsearch ladder"]
    lines = [
        "## Parse ladder",
        "",
        f"Command: {command}. {len(cases)} cases from `../shared/data/json_repair_cases` "
        f"(the jsonrepair and json_repair test suites), {must_fail} of them must fail. "
        "Parsed values are compared, not strings; a must-fail case passes only when no value "
        "is produced. The libraries are called with default options.",
        "",
        "| parser | passed | pass rate | must-fail accepted | µs/case |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, res in results.items():
        lines.append(
            f"| {name} | {res['passed']}/{len(cases)} | {res['passed'] / len(cases):.1%} | "
            f"{res['must_fail_accepted']}/{must_fail} | {res['us_per_case']:.0f} |"
        )
    ratio = ours["passed"] / best_single if best_single else float("inf")
    verdict = (
        "met" if ours["passed"] >= best_single and ours["must_fail_accepted"] == 0 else "NOT met"
    )
    refused = refused_unfinished(cases)
    lines += [
        "",
        f"Before issue 8's fixes the ladder passed {BEFORE_ISSUE_8}/{len(cases)}; now "
        f"{ours['passed']}/{len(cases)}. The fence now closes only at a line start (a reply "
        "whose string value holds ``` is no longer cut there), and no repair invents a value "
        f"for a key the reply did not finish: {len(refused)} cases expect exactly that "
        'invention (`{"a":}` → `{"a": null}`) and are refused on purpose, so the client '
        "asks the model again: " + ", ".join(f"`{r}`" for r in refused) + ".",
        "",
        f"Ladder passes / best single library passes = {ours['passed']}/{best_single} "
        f"= {ratio:.3f}; must-fail accepted by the ladder: {ours['must_fail_accepted']}. "
        f"Target (≥ best single library, 0 must-fail accepted): **{verdict}**.",
        "",
        f"Ladder failures ({len(ours['failures'])}): "
        + (", ".join(f"`{f}`" for f in ours["failures"][:40]) or "none")
        + (" …" if len(ours["failures"]) > 40 else ""),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
