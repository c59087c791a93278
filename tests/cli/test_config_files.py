"""`deepsearch config` says which file it read and where the cache and the endpoint
really are; `config paths` and `config init`; "did you mean" for an unknown key; an
empty config file sets nothing (issue 36, item 14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepsearch.config import load_config
from deepsearch.errors import ConfigError
from tests.cli.test_config_and_doctor import run_cli

SECRET = "sk-test-secret-123456"


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.json"
    path.write_text(text, "utf-8")
    return path


@pytest.mark.parametrize("text", ["", "  \n", "\n\n"])
def test_an_empty_config_file_sets_nothing(tmp_path: Path, text: str) -> None:
    loaded = load_config(config_file=_file(tmp_path, text), environ={})
    assert loaded.settings.agent.max_steps == 100
    assert loaded.user_file == str(tmp_path / "config.json")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"agent": {"max_step": 5}}, "agent.max_step: unknown key (did you mean agent.max_steps?)"),
        ({"agnet": {"budget": 5}}, "agnet: unknown key (did you mean agent?)"),
        ({"search": {"provider": ["jina"]}}, "(did you mean search.providers?)"),
        ({"agent": {"zzzz": 1}}, "agent.zzzz: unknown key"),
    ],
)
def test_an_unknown_key_gets_the_nearest_one(tmp_path: Path, data: dict, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(config_file=_file(tmp_path, json.dumps(data)), environ={})
    assert said in str(caught.value)
    if "zzzz" in said:
        assert "did you mean" not in str(caught.value)


def test_config_names_the_file_it_read_the_cache_and_the_endpoint(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / ".cache"),
        "OPENAI_API_KEY": SECRET,
        "DEEPSEARCH_CACHE_DIR": "",  # the suite sets one; a blank value is none
    }
    lines = run_cli("config", **env).stdout.splitlines()
    default = tmp_path / ".config" / "deepsearch" / "config.json"
    assert f"run: config file = none  (none at {default})" in lines
    assert "run: endpoint = https://api.openai.com/v1  (the provider's default)" in lines
    assert (
        f"run: cache = {tmp_path / '.cache' / 'deepsearch'}  (the platform's user cache folder)"
        in lines
    )
    mine = _file(tmp_path, json.dumps({"cache": {"dir": str(tmp_path / "c")}}))
    shown = run_cli("config", "--config", str(mine), **env).stdout.splitlines()
    assert f"run: config file = {mine}  (--config)" in shown
    assert f"run: cache = {tmp_path / 'c'}  (cache.dir from {mine})" in shown
    by_env = run_cli("config", **env, DEEPSEARCH_CONFIG=str(mine)).stdout.splitlines()
    assert f"run: config file = {mine}  (DEEPSEARCH_CONFIG)" in by_env
    data = json.loads(run_cli("config", "--json", **env).stdout)
    assert data["run"]["config_file"]["value"] is None
    assert data["run"]["cache_dir"]["value"] == str(tmp_path / ".cache" / "deepsearch")


def test_config_paths_lists_what_a_run_uses(tmp_path: Path) -> None:
    done = run_cli(
        "config",
        "paths",
        "--json",
        HOME=str(tmp_path),
        XDG_CACHE_HOME=str(tmp_path / ".cache"),
        DEEPSEARCH_CACHE_DIR="",
    )
    assert done.returncode == 0, done.stderr
    paths = json.loads(done.stdout)
    cache = tmp_path / ".cache" / "deepsearch"
    assert paths["cache"] == str(cache)
    assert paths["learned_output_modes"] == str(cache / "output-modes.json")
    assert paths["config_file"].startswith(str(tmp_path / ".config" / "deepsearch"))
    assert Path(paths["shipped_defaults"]).is_file()


def test_config_init_writes_a_starter_that_loads_and_never_overwrites(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    done = run_cli("config", "init", **env)
    written = tmp_path / ".config" / "deepsearch" / "config.json"
    assert done.returncode == 0, done.stderr
    assert str(written) in done.stdout
    loaded = load_config(config_file=written, environ={})
    assert loaded.settings.agent.effort == "medium"
    # The starter changes nothing: every value is the shipped default.
    assert loaded.settings == load_config(environ={}).settings
    # A preset key is not pinned: editing the effort still brings its step limit.
    low = json.loads(written.read_text("utf-8"))
    low["agent"]["effort"] = "low"
    written.write_text(json.dumps(low), "utf-8")
    assert load_config(config_file=written, environ={}).settings.agent.max_steps == 10
    again = run_cli("config", "init", **env)
    assert again.returncode == 2
    assert (
        again.stderr.strip()
        == f"error: {written}: a config file is already there (not overwritten)"
    )
    elsewhere = tmp_path / "other.json"
    assert run_cli("config", "init", "--config", str(elsewhere), **env).returncode == 0
    assert elsewhere.is_file()
