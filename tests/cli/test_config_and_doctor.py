"""The CLI as a user runs it: `deepsearch.cli.run` (what the installed script calls) in
this process, with stdio captured (tests/cli/inprocess.py); `run_in_process` drives
the Typer app directly through Typer's CliRunner."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deepsearch import __version__
from deepsearch.config import load_config
from tests.cli.inprocess import Outcome, run_cli_in_process
from tests.fakes.gemini_server import FakeGeminiServer
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.ports import refused_url
from tests.fakes.search_servers import FakeSearchServers

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-cli-secret-value-0123456789"


def run_in_process(*args: str, **env: str) -> Outcome:
    """The same entry point in this process (fast: the SDK and tokenizer load once)."""
    from typer.testing import CliRunner

    from deepsearch.cli import make_app

    runner = CliRunner()
    result = runner.invoke(
        make_app(), list(args), env={"COLUMNS": "200", **env}, prog_name="deepsearch"
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Outcome(result.exit_code, result.stdout, result.stderr)


def run_cli(*args: str, **env: str) -> Outcome:
    """`deepsearch ARGS` through `cli.run`: routing, the error boundary, exit codes."""
    return run_cli_in_process(*args, env={"COLUMNS": "200", **env})


def closed_port_url() -> str:
    """A port that refuses connections, held by this process (tests/fakes/ports.py)."""
    return refused_url()


def sdk_retries_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The `openai` SDK's pause before a retry (0.375-0.5 s), made ~0: doctor's ping of a
    closed port is still retried once, without the wait (for tests not about it)."""
    import openai._base_client

    monkeypatch.setattr(openai._base_client, "INITIAL_RETRY_DELAY", 0.001)


@pytest.fixture
def search_fake() -> Iterator[FakeSearchServers]:
    with FakeSearchServers() as servers:
        yield servers


def search_env(servers: FakeSearchServers, providers: str = "searxng") -> dict[str, str]:
    """Doctor probes search live: always point it at the fake (the default duckduckgo
    goes through ddgs/primp, which the Python loopback guard cannot stop)."""
    return {"DEEPSEARCH_SEARCH_PROVIDER": providers, "SEARXNG_URL": servers.base_url("searxng")}


def write_config(tmp_path: Path, data: object, name: str = "user.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_help_and_version() -> None:
    helped = run_cli("--help")
    assert helped.returncode == 0
    assert "config" in helped.stdout and "doctor" in helped.stdout
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"deepsearch {__version__}"


def test_config_masks_secrets() -> None:
    table = run_cli("config", OPENAI_API_KEY=SECRET, GEMINI_API_KEY=SECRET + "g")
    as_json = run_cli("config", "--json", OPENAI_API_KEY=SECRET)
    for done in (table, as_json):
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr
        assert SECRET[:8] not in done.stdout
    payload = json.loads(as_json.stdout)
    assert payload["keys.openai_api_key"]["value"].startswith("****")
    assert payload["keys.openai_api_key"]["source"] == "env OPENAI_API_KEY"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"llm": {"model": "x",}', "invalid JSON"),
        ({"llm": {"modle": "x"}}, "llm.modle: unknown key"),
        ({"llm": {"timeout_s": "soon"}}, "llm.timeout_s"),
        ({"agent": {"effort": "extreme"}}, "agent.effort"),
    ],
    ids=["invalid-json", "unknown-key", "wrong-type", "bad-choice"],
)
def test_bad_config_file_is_one_line_exit_2(tmp_path: Path, content: object, needle: str) -> None:
    path = write_config(tmp_path, content)
    done = run_cli("config", "--config", str(path))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(path) in lines[0] and needle in lines[0]
    assert "Traceback" not in done.stderr + done.stdout


def test_precedence_env_over_file_over_default(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, {"llm": {"model": "file-model", "timeout_s": 50}, "agent": {"max_steps": 7}}
    )
    done = run_cli("config", "--json", "--config", str(path), DEEPSEARCH_MODEL="env-model")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert rows["llm.model"] == {"value": "env-model", "source": "env DEEPSEARCH_MODEL"}
    assert rows["llm.timeout_s"] == {"value": 50.0, "source": str(path)}
    assert rows["agent.max_steps"]["source"] == str(path)
    assert rows["llm.max_retries"]["source"] == "default"
    # the flag layer (research command flags) beats all of them
    loaded = load_config(
        config_file=path,
        environ={"DEEPSEARCH_MODEL": "env-model"},
        overrides={"llm.model": "flag-model"},
    )
    assert loaded.settings.llm.model == "flag-model" and loaded.sources["llm.model"] == "flag"


def test_doctor_judges_the_round_trip_on_form_not_content(
    search_fake: FakeSearchServers,
) -> None:
    # A valid {"ok": false} proves what the check is for: a reply parsed and validated.
    with FakeOpenAIServer(handler=lambda body: {"ok": False}, api_key=SECRET) as server:
        done = run_in_process(
            "doctor", "--json", OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=server.base_url,
            **search_env(search_fake),
        )  # fmt: skip
    row = {r["name"]: r for r in json.loads(done.stdout)["checks"]}["structured output"]
    assert row["status"] == "ok" and "valid Ping in 1 attempt(s)" in row["detail"]


def test_doctor_says_which_rung_a_server_accepts_and_why(
    search_fake: FakeSearchServers,
) -> None:
    from tests.fakes.local_servers import FakeLlamaCppPythonServer

    with FakeLlamaCppPythonServer(handler=lambda body: {"ok": True}) as server:
        done = run_in_process(
            "doctor", "--json", OPENAI_BASE_URL=server.base_url, **search_env(search_fake)
        )
    row = {r["name"]: r for r in json.loads(done.stdout)["checks"]}["structured output"]
    assert row["status"] == "ok", row
    assert row["detail"].endswith(
        "; refuses response_format json_schema (HTTP 500); using json_object + schema"
    )
    assert server.refused_posts == 1


def test_user_config_from_environment_variable(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"agent": {"max_steps": 9}})
    done = run_cli("config", "--json", DEEPSEARCH_CONFIG=str(path))
    assert json.loads(done.stdout)["agent.max_steps"] == {"value": 9, "source": str(path)}


def test_doctor_passes_against_the_openai_fake(search_fake: FakeSearchServers) -> None:
    with FakeOpenAIServer(handler=lambda body: {"ok": True}, api_key=SECRET) as server:
        done = run_in_process(
            "doctor",
            OPENAI_API_KEY=SECRET,
            OPENAI_BASE_URL=server.base_url,
            **search_env(search_fake),
        )
        paths = [r.path for r in server.requests]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "structured output" in done.stdout and "FAIL" not in done.stdout
    assert SECRET not in done.stdout + done.stderr
    assert paths == ["/v1/models", "/v1/chat/completions"]


def test_doctor_passes_against_the_gemini_fake(search_fake: FakeSearchServers) -> None:
    with FakeGeminiServer(handler=lambda body: {"ok": True}) as server:
        done = run_in_process(
            "doctor", GEMINI_API_KEY=SECRET, GEMINI_BASE_URL=server.url, **search_env(search_fake)
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gemini" in done.stdout and SECRET not in done.stdout + done.stderr


def test_doctor_401_fails_with_the_variable_to_fix(search_fake: FakeSearchServers) -> None:
    with FakeOpenAIServer(api_key="the-right-key") as server:
        done = run_in_process(
            "doctor",
            OPENAI_API_KEY=SECRET,
            OPENAI_BASE_URL=server.base_url,
            **search_env(search_fake),
        )
    assert done.returncode == 1
    assert "FAIL" in done.stdout and "OPENAI_API_KEY" in done.stdout
    assert SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_doctor_probes_search_live_and_reports_missing_keys(
    search_fake: FakeSearchServers,
) -> None:
    with FakeOpenAIServer(handler=lambda body: {"ok": True}) as server:
        done = run_cli(
            "doctor",
            OPENAI_API_KEY=SECRET,
            OPENAI_BASE_URL=server.base_url,
            **search_env(search_fake, "searxng,brave"),
        )
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if "│" in line}
    assert "ok" in rows["search searxng"] and "3 results in" in rows["search searxng"]
    assert "FAIL" in rows["search brave"] and "BRAVE_API_KEY" in rows["search brave"]
    probe = search_fake.requests_for("searxng")
    assert len(probe) == 1 and probe[0].param("format") == "json"


def test_doctor_search_failure_is_a_failing_row(search_fake: FakeSearchServers) -> None:
    search_fake.always("searxng", 503)
    with FakeOpenAIServer(handler=lambda body: {"ok": True}) as server:
        done = run_in_process(
            "doctor",
            OPENAI_API_KEY=SECRET,
            OPENAI_BASE_URL=server.base_url,
            **search_env(search_fake),
        )
    assert done.returncode == 1, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if "search searxng" in line)
    assert "FAIL" in row and "failed: searxng" in row and "503" in row
    assert "structured output" in done.stdout and "Traceback" not in done.stderr


def test_doctor_keyless_server_and_url_passwords_stay_hidden(
    search_fake: FakeSearchServers,
) -> None:
    password, search_password = "hunter22-llm", "hunter22-search"
    search_fake.always("searxng", 500)
    searxng = search_fake.base_url("searxng").replace("http://", f"http://s:{search_password}@")
    with FakeOpenAIServer(handler=lambda body: {"ok": True}) as server:
        base_url = server.base_url.replace("http://", f"http://deploy:{password}@")
        done = run_in_process(
            "doctor",
            OPENAI_BASE_URL=base_url,
            DEEPSEARCH_SEARCH_PROVIDER="searxng",
            SEARXNG_URL=searxng,
        )
        chat = server.chat_requests
    out = done.stdout + done.stderr
    assert password not in out and search_password not in out
    assert "deploy:****@127.0.0.1" in done.stdout and "keyless" in done.stdout
    assert "structured output" in done.stdout and len(chat) == 1
    assert done.returncode == 1  # only the failing search row
    assert sum("FAIL" in line for line in done.stdout.splitlines()) == 1


def test_doctor_llm_error_hides_the_url_password(search_fake: FakeSearchServers) -> None:
    password = "hunter22-llm-error"
    with FakeOpenAIServer(api_key="the-right-key") as server:
        base_url = server.base_url.replace("http://", f"http://deploy:{password}@")
        done = run_in_process(
            "doctor", OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=base_url, **search_env(search_fake)
        )
    assert done.returncode == 1
    assert "rejected the credentials" in done.stdout and "deploy:****@" in done.stdout
    assert password not in done.stdout + done.stderr and SECRET not in done.stdout


def test_a_basic_credential_echoed_by_the_server_stays_hidden(
    search_fake: FakeSearchServers,
) -> None:
    """Issue 31: a `user:pass@` base URL is sent as `Authorization: Basic base64(user:pass)`;
    a server that echoes the header showed it unmasked."""
    import base64

    password = "hunter22-basic"
    basic = base64.b64encode(f"deploy:{password}".encode()).decode()
    echo = Reply.error(400, f"bad header 'Authorization: Basic {basic}'")
    with FakeOpenAIServer(handler=lambda body: echo) as server:
        base_url = server.base_url.replace("http://", f"http://deploy:{password}@")
        done = run_in_process(
            "doctor", OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=base_url, **search_env(search_fake)
        )
    out = done.stdout + done.stderr
    assert "bad header" in out and "Basic ****" in out
    assert basic not in out and password not in out


@pytest.mark.parametrize("runner", [run_cli, run_in_process], ids=["cli-run", "typer-app"])
def test_no_provider_lists_every_option(tmp_path: Path, runner: Callable[..., Outcome]) -> None:
    """Nothing configured: still the whole table, the LLM row saying how to get one."""
    path = write_config(tmp_path, {"llm": {"ollama_url": closed_port_url()}})
    done = runner("doctor", "--config", str(path), "--json", "--search-provider", "searxng",
                  "--searxng-url", closed_port_url())  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"error: 2 of {len(json.loads(done.stdout)['checks'])} checks failed"
    ]
    rows = {row["name"]: row for row in json.loads(done.stdout)["checks"]}
    assert rows["llm provider"]["status"] == "fail"
    for needle in ("GEMINI_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "Ollama"):
        assert needle in rows["llm provider"]["detail"]
    assert rows["llm endpoint"]["status"] == rows["structured output"]["status"] == "skipped"
    assert {"search searxng", "cache folder", "sandbox"} <= set(rows)
    assert "Traceback" not in done.stderr


def test_doctor_finds_a_local_ollama_server(tmp_path: Path, search_fake: FakeSearchServers) -> None:
    with FakeOpenAIServer(handler=lambda body: {"ok": True}) as server:
        path = write_config(tmp_path, {"llm": {"ollama_url": server.url}})
        done = run_in_process("doctor", "--config", str(path), **search_env(search_fake))
        chat = server.chat_requests
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ollama" in done.stdout and "not needed" in done.stdout
    assert chat[0].body["model"] == "qwen2.5:7b"
    assert chat[0].headers["authorization"] == "Bearer ollama"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"search": {"providers": ["bogus"]}}, "search.providers: item 0"),
        ({"agent": {"boost_hostnames": [1]}}, "agent.boost_hostnames: item 0"),
        ({"llm": {"providers": {"openai": {"tools": {"agentt": {"temperature": 1}}}}}}, "agentt"),
    ],
)
def test_nested_config_errors_name_the_file_and_key(
    tmp_path: Path, content: dict, expected: str
) -> None:
    path = write_config(tmp_path, content)
    done = run_cli("config", "--config", str(path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and str(path) in done.stderr and expected in done.stderr


def test_non_utf8_config_is_a_clean_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b"\xff\xfe{}")
    done = run_cli("config", "--config", str(path))
    assert done.returncode == 2 and "not UTF-8" in done.stderr and "Traceback" not in done.stderr


def test_empty_object_in_user_file_keeps_the_defaults(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"llm": {"providers": {}}})
    done = run_cli("config", "--json", "--config", str(path))
    assert json.loads(done.stdout)["llm.providers.openai.default.model"]["value"] == "gpt-4o-mini"


def test_url_passwords_are_masked() -> None:
    done = run_cli("config", "--json", OPENAI_BASE_URL="http://user:hunter22@llm.internal/v1")
    assert "hunter22" not in done.stdout
    assert (
        json.loads(done.stdout)["llm.openai_base_url"]["value"]
        == "http://user:****@llm.internal/v1"
    )


def test_credentials_in_a_url_query_are_masked() -> None:
    url = "http://127.0.0.1:9/v1?key=SECRETQ1&region=eu&access_token=SECRETQ2"
    done = run_in_process("config", "--json", OPENAI_BASE_URL=url)
    assert "SECRETQ" not in done.stdout + done.stderr
    shown = json.loads(done.stdout)["llm.openai_base_url"]["value"]
    assert shown == "http://127.0.0.1:9/v1?key=****&region=eu&access_token=****"


def test_every_key_field_is_a_secret_with_an_env_var() -> None:
    from deepsearch.commands.doctor_cmd import SEARCH_KEYS, _clean
    from deepsearch.config import KeysConfig
    from deepsearch.llm.factory import KEY_ENV

    fields = list(KeysConfig.model_fields)
    values = {field: f"secret-{i}-value" for i, field in enumerate(fields)}
    env = {var: values[f"{name}_api_key"] for name, var in KeysConfig.env_vars().items()}
    keys = load_config(environ=env, config_file=None).settings.keys
    assert sorted(keys.secret_values()) == sorted(values.values()), "a key field has no env var"
    assert KeysConfig(openai_api_key="", gemini_api_key="g-key").secret_values() == ["g-key"]

    settings = load_config(environ=env, config_file=None).settings
    cleaned = _clean(" and ".join(values.values()), settings)
    assert not any(value in cleaned for value in values.values())

    assert KEY_ENV == {"gemini": "GEMINI_API_KEY", "openai": "OPENAI_API_KEY"}
    assert SEARCH_KEYS == {
        "jina": "JINA_API_KEY",
        "brave": "BRAVE_API_KEY",
        "serper": "SERPER_API_KEY",
    }


def test_doctor_gemini_refused_key_fails_the_endpoint_row(
    search_fake: FakeSearchServers,
) -> None:
    from tests.fakes.loopback import HTTPReply, RecordedRequest

    class Refusing(FakeGeminiServer):
        def respond(self, request: RecordedRequest) -> HTTPReply:
            if request.method == "GET" and "/models" in request.path:
                error = {"code": 403, "message": f"key {SECRET} refused", "status": "DENIED"}
                return HTTPReply(403, {"error": error})
            return super().respond(request)

    with Refusing(handler=lambda body: {"ok": True}) as server:
        done = run_in_process(
            "doctor", GEMINI_API_KEY=SECRET, GEMINI_BASE_URL=server.url, **search_env(search_fake)
        )
        generated = server.generate_requests
    assert done.returncode == 1 and "Traceback" not in done.stderr
    row = next(line for line in done.stdout.splitlines() if "llm endpoint" in line)
    assert "FAIL" in row and "GEMINI_API_KEY" in row
    assert SECRET not in done.stdout + done.stderr
    assert generated == [], "no round trip after a failed endpoint check"


def test_a_directory_given_as_config_is_named_as_such(tmp_path: Path) -> None:
    done = run_cli("config", "--config", str(tmp_path))
    assert done.returncode == 2 and "is a directory" in done.stderr
