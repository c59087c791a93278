"""Live runs against real providers. Skipped by default (see tests/conftest.py).

    DEEPSEARCH_LIVE=1 GEMINI_API_KEY=... .venv/bin/pytest -m live
    DEEPSEARCH_LIVE=1 OPENAI_API_KEY=... .venv/bin/pytest -m live

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
