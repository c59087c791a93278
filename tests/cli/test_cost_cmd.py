"""`deepsearch cost`: the expected cost before a run, from the benchmarks' measured
tokens at the model's price (issue 34)."""

from __future__ import annotations

import json

import pytest

from deepsearch.commands.cost_cmd import ANSWERED, NOT_FOUND_MOST, OUTPUT_SHARE, TEAM
from tests.cli.inprocess import run_cli_in_process

KEY = {"OPENAI_API_KEY": "sk-test-key-0123456789"}


def mini(tokens: int) -> float:
    return tokens * ((1 - OUTPUT_SHARE) * 0.15 + OUTPUT_SHARE * 0.60) / 1_000_000


def test_the_estimate_prices_the_measured_tokens_at_the_models_price() -> None:
    done = run_cli_in_process("cost", "Who directed Maximum Overdrive?", "--json", env=KEY)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["model"] == "gpt-4o-mini" and out["price_per_million"]["input"] == 0.15
    assert out["tokens"] == {"least": ANSWERED[0], "typical": ANSWERED[1],
                             "most": NOT_FOUND_MOST, "budget": 500_000}  # fmt: skip
    cost = out["cost_usd"]
    assert cost["least"] == pytest.approx(mini(ANSWERED[0]))
    assert cost["typical"] == pytest.approx(mini(ANSWERED[1]))
    assert cost["most"] == pytest.approx(mini(NOT_FOUND_MOST))
    assert cost["ceiling"] == pytest.approx(mini(500_000))
    assert "BENCHMARKS.md" in out["figures_from"]


def test_lines_name_the_price_the_range_and_the_cap() -> None:
    done = run_cli_in_process("cost", "--team-size", "3", "--max-cost", "0.002", env=KEY)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "$0.15 / $0.60 per 1M" in text and "shipped table" in text
    assert f"typically ${mini(TEAM[1]):.4f}" in text
    assert "never more than $0.0020 (--max-cost)" in text


def test_an_unpriced_model_says_how_to_add_its_price() -> None:
    done = run_cli_in_process("cost", "--model", "acme-large-2", env=KEY)
    assert done.returncode == 0
    assert "acme-large-2" in done.stdout and "llm.prices" in done.stdout
    assert "no known price" in done.stdout and "expected" not in done.stdout


def test_a_bad_flag_is_one_line_exit_2() -> None:
    done = run_cli_in_process("cost", "--max-cost", "-1", env=KEY)
    assert done.returncode == 2 and "--max-cost" in done.stderr and done.stdout == ""
