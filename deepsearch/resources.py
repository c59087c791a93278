"""Locate files that ship with the package: prompt templates and the default config.

In a wheel they live inside the package (`deepsearch/_prompts`, `deepsearch/_data`);
in a source checkout or editable install they are the top-level `prompts/` and
`config.json`. Both layouts are supported so `make install` and `pip install` agree.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_REPO_ROOT = _PACKAGE_DIR.parent


@cache
def prompts_dir() -> Path:
    for candidate in (_PACKAGE_DIR / "_prompts", _REPO_ROOT / "prompts"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("deepsearch prompt templates are missing from this installation")


@cache
def default_config_path() -> Path:
    for candidate in (_PACKAGE_DIR / "_data" / "config.json", _REPO_ROOT / "config.json"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("deepsearch default config.json is missing from this installation")
