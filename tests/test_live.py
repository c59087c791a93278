"""Live runs against real providers. Skipped by default (see tests/conftest.py).

    DEEPSEARCH_LIVE=1 GEMINI_API_KEY=... .venv/bin/pytest -m live
    DEEPSEARCH_LIVE=1 OPENAI_API_KEY=... .venv/bin/pytest -m live

Your own local server (llama.cpp `llama-server`, llama-cpp-python, Ollama's /v1,
LM Studio, vLLM), no key needed:

    DEEPSEARCH_LIVE=1 DEEPSEARCH_LIVE_BASE_URL=http://127.0.0.1:8080/v1 \
        DEEPSEARCH_LIVE_MODEL=NAME .venv/bin/pytest -m live -k local

The hermetic fixtures scrub keys from the environment, so the keys are read from
the real environment before the fixtures run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.live

_REAL_ENV = dict(os.environ)  # captured at import, before the hermetic fixture scrubs it
DEEPSEARCH = Path(sys.executable).parent / "deepsearch"


def _env(tmp_path: Path) -> dict[str, str]:
    if not (_REAL_ENV.get("GEMINI_API_KEY") or _REAL_ENV.get("OPENAI_API_KEY")):
        pytest.skip("no GEMINI_API_KEY or OPENAI_API_KEY in the environment")
    return {**_REAL_ENV, "DEEPSEARCH_CACHE_DIR": str(tmp_path / "cache")}


def test_doctor_passes_with_real_keys(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(DEEPSEARCH), "doctor"], env=_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_real_research_run_ends_within_budget(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            str(DEEPSEARCH),
            "Who directed the 1986 film Maximum Overdrive?",
            "--json",
            "--budget",
            "60000",
            "--timeout",
            "240",
            "--quiet",
        ],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 3), done.stderr
    out = json.loads(done.stdout)
    assert out["usage"]["total_tokens"] <= 60_000
    assert "King" in out["answer"]


def _local_env(tmp_path: Path) -> dict[str, str]:
    base_url = _REAL_ENV.get("DEEPSEARCH_LIVE_BASE_URL")
    if not base_url:
        pytest.skip("no DEEPSEARCH_LIVE_BASE_URL (a local OpenAI-compatible server)")
    env = {k: v for k, v in _REAL_ENV.items() if k not in ("OPENAI_API_KEY", "GEMINI_API_KEY")}
    env.update(
        OPENAI_BASE_URL=base_url,
        DEEPSEARCH_LLM_PROVIDER="openai",
        DEEPSEARCH_CACHE_DIR=str(tmp_path / "cache"),
    )
    if _REAL_ENV.get("DEEPSEARCH_LIVE_MODEL"):
        env["DEEPSEARCH_MODEL"] = _REAL_ENV["DEEPSEARCH_LIVE_MODEL"]
    return env


def test_local_server_doctor_finds_a_rung(tmp_path: Path) -> None:
    """Every request is accepted on some rung: the structured-output row passes and
    names the rung the server took."""
    done = subprocess.run(
        [str(DEEPSEARCH), "doctor", "--json"],
        env=_local_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    rows = {r["name"]: r for r in json.loads(done.stdout)["checks"]}
    row = rows["structured output"]
    assert row["status"] == "ok", row
    assert "using " in row["detail"], row
    assert (tmp_path / "cache" / "output-modes.json").is_file()


def test_local_server_research_run_ends_honestly(tmp_path: Path) -> None:
    """A small local model need not answer well; the run must end with one of the
    documented statuses and exit codes, within its budget, never a crash."""
    done = subprocess.run(
        [
            str(DEEPSEARCH),
            "Who directed the 1986 film Maximum Overdrive?",
            "--json",
            "--budget",
            "60000",
            "--timeout",
            "900",
            "--quiet",
        ],
        env=_local_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=1000,
    )
    assert done.returncode in (0, 3, 4), done.stderr
    out = json.loads(done.stdout)
    assert out["status"] in ("answered", "forced", "not_found")
    assert out["usage"]["total_tokens"] <= 60_000
