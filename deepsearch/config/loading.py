"""Loading the layers: CLI flag > environment > user config file > shipped config.json.

Every layer is a nested dict; they are deep-merged in precedence order while the
source of every leaf is remembered, then the result is validated once by pydantic.
`with_overrides` puts one more layer over settings already loaded (serve's request
knobs): the same validation, the same one-line error naming the knob.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from deepsearch.config.models import ENV_KEYS, LoadedConfig, Settings
from deepsearch.config.presets import EFFORT_PRESETS, PRESET_KEYS
from deepsearch.errors import ConfigError
from deepsearch.resources import default_config_path

# Keys whose value is a list; from the environment they are comma separated.
_LIST_KEYS = {"search.providers"}
DEFAULT_USER_CONFIG = Path("~/.config/deepsearch/config.json")


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _merge_layer(
    merged: dict[str, Any], sources: dict[str, str], layer: Mapping[str, Any], source: str
) -> None:
    for dotted, value in flatten(layer).items():
        if isinstance(value, Mapping) and not value:
            continue  # `{}` in a user file means "no change", not "erase the defaults"
        _set_dotted(merged, dotted, value)
        sources[dotted] = source


@lru_cache(maxsize=2)
def _default_layer(path: Path) -> tuple[str, tuple[str, ...]]:
    """The shipped defaults merged into an empty tree, read once per process (they do not
    change while it runs; re-reading and re-merging them was most of a load_config): the
    tree as JSON text, which each call parses into a tree of its own, and its dotted keys."""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    _merge_layer(merged, sources, _read_json_file(path), "default")
    return json.dumps(merged), tuple(sources)


def _read_json_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: cannot read config file (not UTF-8 text)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file ({exc.strerror or exc})") from None
    if not text.strip():
        return {}  # an empty file (a fresh `touch`) sets nothing: no error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object")
    return data


def _env_layer(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    layer: dict[str, Any] = {}
    names: dict[str, str] = {}
    for var, dotted in ENV_KEYS.items():
        raw = environ.get(var)
        if raw is None or raw.strip() == "":
            continue
        value: Any = raw.strip()
        if dotted in _LIST_KEYS:
            value = [part.strip() for part in raw.split(",") if part.strip()]
        _set_dotted(layer, dotted, value)
        names[dotted] = var
    return layer, names


def _user_config_path(
    explicit: str | os.PathLike[str] | None, environ: Mapping[str, str]
) -> Path | None:
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            what = "is a directory, not a config file" if path.is_dir() else "config file not found"
            raise ConfigError(f"{path}: {what}")
        return path
    env_path = environ.get("DEEPSEARCH_CONFIG")
    if env_path:
        path = Path(env_path).expanduser()
        if not path.is_file():
            what = "is a directory, not a config file" if path.is_dir() else "config file not found"
            raise ConfigError(f"{path}: {what} (from DEEPSEARCH_CONFIG)")
        return path
    default = DEFAULT_USER_CONFIG.expanduser()
    return default if default.is_file() else None


def describe_validation_error(exc: ValidationError, sources: dict[str, str]) -> str:
    """One line: the source (file, env var or flag), the dotted key, the problem."""
    err = exc.errors()[0]
    parts = [str(p) for p in err["loc"] if isinstance(p, str) and p != "[key]"]
    dotted = ".".join(parts)
    source = None
    for cut in range(len(parts), 0, -1):  # the longest configured prefix names the source
        prefix = ".".join(parts[:cut])
        source = sources.get(prefix) or next(
            (s for k, s in sources.items() if k.startswith(prefix + ".")), None
        )
        if source:
            break
    message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
    if err["type"] == "extra_forbidden" and (near := _near_key(parts)) is not None:
        message = f"unknown key (did you mean {near}?)"
    message = message.removeprefix("Value error, ")
    index = next((p for p in err["loc"] if isinstance(p, int)), None)
    if index is not None:
        message = f"item {index}: {message}"
    return f"{source or 'config'}: {dotted}: {message}"


def _near_key(parts: list[str]) -> str | None:
    """The dotted key an unknown one most likely meant (`agent.max_step` ->
    `agent.max_steps`), from the fields of the section it was found in; None when
    nothing is close or the section is no model (a provider or tool table)."""
    model: Any = Settings
    for part in parts[:-1]:
        field = getattr(model, "model_fields", {}).get(part)
        model = getattr(field, "annotation", None) if field is not None else None
        if not isinstance(model, type) or not issubclass(model, BaseModel):
            return None
    names = list(getattr(model, "model_fields", {}))
    match = difflib.get_close_matches(parts[-1], names, n=1, cutoff=0.6)
    return ".".join([*parts[:-1], match[0]]) if match else None


def apply_effort_preset(merged: dict[str, Any], sources: dict[str, str]) -> None:
    """Fill the preset of the effective effort into every PRESET_KEYS key that only the
    shipped defaults set (flags, environment and user file win); its source becomes
    `effort <level>` where the value changes."""
    agent = merged.get("agent")
    effort = agent.get("effort", "medium") if isinstance(agent, dict) else "medium"
    preset = EFFORT_PRESETS.get(effort) if isinstance(effort, str) else None
    if preset is None:  # validation names the bad value
        return
    for key in PRESET_KEYS:
        dotted = f"agent.{key}"
        if sources.get(dotted, "default") != "default":
            continue
        value = getattr(preset, key)
        if not isinstance(agent, dict) or agent.get(key) != value:
            _set_dotted(merged, dotted, value)
            sources[dotted] = f"effort {effort}"


def load_config(
    *,
    config_file: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    override_labels: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Build the effective settings. `overrides` are CLI flags as dotted keys;
    `override_labels` names the flag behind each key, for error messages."""
    environ = os.environ if environ is None else environ
    default_tree, default_keys = _default_layer(default_config_path())
    merged: dict[str, Any] = json.loads(default_tree)
    sources: dict[str, str] = dict.fromkeys(default_keys, "default")

    user_path = _user_config_path(config_file, environ)
    if user_path is not None:
        _merge_layer(merged, sources, _read_json_file(user_path), str(user_path))

    env_layer, env_names = _env_layer(environ)
    for dotted, value in flatten(env_layer).items():
        _set_dotted(merged, dotted, value)
        sources[dotted] = f"env {env_names[dotted]}"

    _override(merged, sources, overrides or {}, override_labels or {}, default_label="flag")
    apply_effort_preset(merged, sources)
    settings = _validated(merged, sources)
    return LoadedConfig(
        settings=settings, sources=sources, user_file=str(user_path) if user_path else None
    )


def with_overrides(
    settings: Settings, overrides: Mapping[str, Any], labels: Mapping[str, str]
) -> Settings:
    """`settings` with these dotted keys set (None: left alone), by the flags' own
    steps (`_override`, `_validated`): a bad value is a ConfigError naming `labels`'
    name for its key, worded as a bad flag is (`team_size: agent.team_size: ...`)."""
    merged = settings.model_dump()
    sources: dict[str, str] = {}
    _override(merged, sources, overrides, labels, default_label="override")
    return _validated(merged, sources)


def _override(
    merged: dict[str, Any],
    sources: dict[str, str],
    overrides: Mapping[str, Any],
    labels: Mapping[str, str],
    *,
    default_label: str,
) -> None:
    """The last layer: flags (or a request's knobs) as dotted keys, each labelled with
    the name its user typed; None leaves a key as it is."""
    for dotted, value in overrides.items():
        if value is None:
            continue
        _set_dotted(merged, dotted, value)
        sources[dotted] = labels.get(dotted, default_label)


def _validated(merged: dict[str, Any], sources: dict[str, str]) -> Settings:
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, sources)) from None
