"""The effective configuration as `deepsearch config` prints it: every leaf, its
value (secrets masked) and its source."""

from __future__ import annotations

import json
from typing import Any

from pydantic import SecretStr

from deepsearch.config.loading import flatten
from deepsearch.config.models import LoadedConfig
from deepsearch.config.redaction import mask_secret, redact_userinfo


def effective_values(loaded: LoadedConfig) -> dict[str, tuple[Any, str]]:
    """dotted key -> (JSON value, source), secrets masked (for `config --json`)."""
    data = loaded.settings.model_dump(mode="python")
    out: dict[str, tuple[Any, str]] = {}
    for dotted, value in sorted(flatten(data).items()):
        if isinstance(value, SecretStr):
            value = mask_secret(value.get_secret_value())
        elif isinstance(value, str):
            value = redact_userinfo(value)
        out[dotted] = (value, loaded.sources.get(dotted, "built-in"))
    return out


def effective_items(loaded: LoadedConfig) -> list[tuple[str, str, str]]:
    """(dotted key, display value, source) for every leaf, secrets masked."""
    data = loaded.settings.model_dump(mode="python")
    rows: list[tuple[str, str, str]] = []
    for dotted, value in sorted(flatten(data).items()):
        if isinstance(value, SecretStr):
            shown = mask_secret(value.get_secret_value())
        elif value is None:
            # An unset choice is made at run time (llm.provider: by the keys that are set).
            shown = "auto" if dotted == "llm.provider" else "-"
        else:
            shown = json.dumps(value) if not isinstance(value, str) else redact_userinfo(value)
        rows.append((dotted, shown, loaded.sources.get(dotted, "built-in")))
    return rows
