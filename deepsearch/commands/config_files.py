"""Where a run's configuration and state live: which config file was read (and why
that one), the cache folder, the learned output modes; `config paths` prints them,
`config init` writes a starter config file. Shown first by `deepsearch config`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from deepsearch.commands.resolution import Decision
from deepsearch.config import DEFAULT_USER_CONFIG, LoadedConfig
from deepsearch.errors import CommandFailed, UsageError

# The keys a newcomer changes first; every value is the shipped default (null: decided
# at run time), so the file changes nothing until edited.
STARTER: dict[str, object] = {
    "llm": {"provider": None, "model": None},
    "search": {"providers": ["duckduckgo"]},
    # effort only: a key the preset sets (max_steps, ...) written here would keep its
    # value when the effort is edited, since a file's value wins over the preset's.
    "agent": {"effort": "medium", "timeout_s": None, "language": None},
    "cache": {"enabled": True, "dir": None},
}


def config_file_decision(loaded: LoadedConfig) -> Decision:
    """The user config file read, and what chose it; or none, and where it was looked for."""
    default = DEFAULT_USER_CONFIG.expanduser()
    if loaded.user_file is None:
        return Decision("config file", "none", f"none at {default}", "config_file", None)
    path = Path(loaded.user_file)
    from_env = os.environ.get("DEEPSEARCH_CONFIG")
    if from_env and Path(from_env).expanduser() == path:
        why = "DEEPSEARCH_CONFIG"
    elif path == default:
        why = "the default location"
    else:
        why = "--config"
    return Decision("config file", str(path), why, "config_file", str(path))


def cache_decision(loaded: LoadedConfig) -> Decision:
    """The cache folder a run would open (or that the cache is off)."""
    from deepsearch.web.cache import default_cache_dir

    cache, sources = loaded.settings.cache, loaded.sources
    if cache.dir:
        path, why = Path(cache.dir).expanduser(), f"cache.dir from {sources.get('cache.dir')}"
    else:
        path, why = default_cache_dir(), "the platform's user cache folder"
    if not cache.enabled:
        why = f"off (cache.enabled from {sources.get('cache.enabled', 'config')}); {why}"
    return Decision("cache", str(path), why, "cache_dir", str(path))


def path_rows(loaded: LoadedConfig) -> list[tuple[str, str]]:
    """`config paths`: every file and folder a run reads or writes, as (what, path)."""
    from deepsearch.resources import default_config_path

    cache = Path(cache_decision(loaded).value)
    user = loaded.user_file or f"{DEFAULT_USER_CONFIG.expanduser()} (none there)"
    return [
        ("config file", user),
        ("shipped defaults", str(default_config_path())),
        ("cache", str(cache)),
        ("learned output modes", str(cache / "output-modes.json")),
    ]


def starter_path(explicit: Path | None) -> Path:
    """Where `config init` writes: --config, else $DEEPSEARCH_CONFIG, else the default."""
    if explicit is not None:
        return explicit.expanduser()
    from_env = os.environ.get("DEEPSEARCH_CONFIG")
    return Path(from_env).expanduser() if from_env else DEFAULT_USER_CONFIG.expanduser()


def write_starter(path: Path) -> None:
    """A starter config at `path`; an existing file is never overwritten."""
    if path.exists():
        raise UsageError(f"{path}: a config file is already there (not overwritten)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as file:
            file.write(json.dumps(STARTER, indent=2) + "\n")
    except OSError as exc:
        raise CommandFailed(
            f"{path}: cannot write the config file ({exc.strerror or exc})"
        ) from None
