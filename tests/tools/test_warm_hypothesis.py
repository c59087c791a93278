"""tools/warm_hypothesis.py, run by `make install`, builds the Unicode tables of the
codecs the property tests draw from (what it saves is time: measured, not tested here).
This keeps its list in step with the tests."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _codecs() -> tuple[str, ...]:
    spec = importlib.util.spec_from_file_location(
        "warm_hypothesis", ROOT / "tools" / "warm_hypothesis.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.CODECS)


def test_every_codec_a_property_test_draws_from_is_warmed() -> None:
    used = {"utf-8"}  # st.text()'s default
    for path in (ROOT / "tests").rglob("test_*.py"):
        used |= set(re.findall(r"codec=\"([\w-]+)\"", path.read_text("utf-8")))
    assert used <= set(_codecs()), "add the codec to tools/warm_hypothesis.py's CODECS"
