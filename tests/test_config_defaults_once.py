"""The shipped defaults are read once per process (deepsearch/config/loading.py,
`_default_layer`), yet every load starts from them as shipped: what one load's layers
set (a flag, the environment, a user file) is never seen by the next."""

from __future__ import annotations

import json
from pathlib import Path

from deepsearch.config import load_config


def test_a_load_never_sees_what_an_earlier_loads_layers_set(tmp_path: Path) -> None:
    user = tmp_path / "config.json"
    user.write_text(json.dumps({"agent": {"max_references": 3, "reflect": False}}), "utf-8")
    first = load_config(
        config_file=user,
        overrides={"agent.max_steps": 7},
        environ={"DEEPSEARCH_SEARCH_PROVIDER": "brave"},
        override_labels={"agent.max_steps": "--max-steps"},
    )
    assert first.settings.agent.max_steps == 7
    assert first.settings.agent.max_references == 3
    assert first.settings.agent.reflect is False  # a false value is a value, not "unset"
    assert first.settings.search.providers == ["brave"]

    again = load_config(environ={})
    # config.json ships max_steps 100, max_references 10, reflect true and duckduckgo.
    assert again.settings.agent.max_steps == 100
    assert again.settings.agent.max_references == 10
    assert again.settings.agent.reflect is True
    assert again.settings.search.providers == ["duckduckgo"]
    assert again.sources["agent.max_steps"] == "default"
    assert again.sources["agent.max_references"] == "default"
    assert again.sources["search.providers"] == "default"
    assert again.user_file is None
