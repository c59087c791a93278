"""`deepsearch serve` the command: the research flags become every run's defaults, an
exposed address needs a key, start-up problems are one line and exit 2. (That nothing
of the server stack loads unless the server runs is checked in the one fresh
interpreter of tests/test_fresh_process.py.)"""

from __future__ import annotations

import io
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from deepsearch.cli import run
from tests.cli.inprocess import run_cli_in_process
from tests.cli.test_end_to_end import ANSWER_STEP, QUESTION, SECRET, router
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers

if TYPE_CHECKING:  # the server stack loads when a test starts it, not at collection
    from deepsearch.server import app as server_app


def flags(search: FakeSearchServers) -> list[str]:
    return [
        "--llm-provider",
        "openai",
        "--search-provider",
        "searxng",
        "--searxng-url",
        search.base_url("searxng"),
        "--allow-private-urls",
        "--no-cache",
    ]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[server_app.ServerConfig]:
    """Serve up to the point of running uvicorn; the configs the app was built with."""
    from deepsearch.commands import serve_cmd
    from deepsearch.server import app as server_app

    configs: list[server_app.ServerConfig] = []
    real = server_app.create_app

    def capture(config: server_app.ServerConfig) -> Any:
        configs.append(config)
        return real(config)

    monkeypatch.setattr(server_app, "create_app", capture)
    monkeypatch.setattr(serve_cmd, "_run", lambda app, sock, caught: sock.close())
    return configs


@pytest.fixture
def llm_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The provider's environment, for a serve that never runs: no step is scripted."""
    with FakeOpenAIServer(router([])) as llm:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        yield llm


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_an_exposed_address_without_a_key_is_refused(
    capsys: pytest.CaptureFixture[str], started: list[Any]
) -> None:
    assert run(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "refusing to serve on 0.0.0.0 without an API key" in one_error_line(capsys)
    assert started == []


@pytest.mark.parametrize(
    ("extra", "env", "key"),
    [
        (["--api-key", "k-flag"], {}, "k-flag"),
        ([], {"DEEPSEARCH_SERVER_KEY": "k-env"}, "k-env"),
        (["--insecure-no-auth"], {}, None),
    ],
)
def test_an_exposed_address_starts_with_a_key_or_the_insecure_flag(
    monkeypatch: pytest.MonkeyPatch,
    started: list[server_app.ServerConfig],
    llm_env: FakeOpenAIServer,
    search: FakeSearchServers,
    extra: list[str],
    env: dict[str, str],
    key: str | None,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert run(["serve", "--host", "0.0.0.0", "--port", "0", *extra, *flags(search)]) == 0
    [config] = started
    assert config.api_key == key and config.max_concurrent == 4


def test_start_up_problems_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str],
    started: list[Any],
    llm_env: FakeOpenAIServer,
    search: FakeSearchServers,
) -> None:
    assert run(["serve", "--json", *flags(search)]) == 2
    assert "--json" in one_error_line(capsys)
    assert run(["serve", "--budget", "lots"]) == 2
    assert "--budget" in one_error_line(capsys)
    assert run(["serve", "what is this?"]) == 2
    assert "takes no question" in one_error_line(capsys)
    assert run(["serve", "--trace", "/no/such/dir/t.jsonl", *flags(search)]) == 2
    assert "cannot write the trace there" in one_error_line(capsys)
    assert run(["serve", "--corpus", "/no/such/notes", *flags(search)]) == 2
    assert "--corpus must be a directory" in one_error_line(capsys)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        assert run(["serve", "--port", port, *flags(search)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in one_error_line(capsys)
    os.environ.pop("OPENAI_API_KEY")
    os.environ.pop("OPENAI_BASE_URL")
    assert run(["serve", "--port", "0", *flags(search)]) == 2  # no provider can be built
    assert "OPENAI_API_KEY" in one_error_line(capsys)
    assert started == []


def test_the_research_flags_are_the_defaults_of_every_run(
    started: list[server_app.ServerConfig], llm_env: FakeOpenAIServer, search: FakeSearchServers
) -> None:
    args = ["serve", "--port", "0", "--budget", "30000", "--max-steps", "7", *flags(search)]
    assert run([*args, "--max-concurrent", "2", "--bad-hostnames", "spam.example.com"]) == 0
    [config] = started
    agent = config.settings.agent
    assert agent.token_budget == 30_000 and agent.max_steps == 7
    assert agent.bad_hostnames == ["spam.example.com"]
    assert config.max_budget == 30_000, "--max-budget defaults to the run budget"
    assert config.max_concurrent == 2 and config.settings.llm.provider == "openai"


def test_the_command_serves_the_sdk(search: FakeSearchServers, tmp_path: Path) -> None:
    """`deepsearch serve` through `cli.run`; a client thread waits for the banner (no
    fixed sleep), asks one question with the real SDK, then sends Ctrl-C."""
    import openai

    err = io.StringIO()
    answers: list[Any] = []

    def client_then_ctrl_c() -> None:
        try:
            deadline = time.monotonic() + 30
            while "listening on" not in err.getvalue() and time.monotonic() < deadline:
                time.sleep(0.01)
            base_url = err.getvalue().split("listening on ")[1].split()[0]
            client = openai.OpenAI(base_url=base_url, api_key="srv-key", max_retries=0)
            answers.append(
                client.chat.completions.create(
                    model="deepsearch", messages=[{"role": "user", "content": QUESTION}]
                )
            )
        except Exception as exc:  # shown by the assertion below, after the server stops
            answers.append(exc)
        finally:
            os.kill(os.getpid(), signal.SIGINT)

    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": llm.base_url,
               "DEEPSEARCH_SERVER_KEY": "srv-key"}  # fmt: skip
        client = threading.Thread(target=client_then_ctrl_c, daemon=True)
        client.start()
        args = ["serve", "--port", "0", "--budget", "20000", *flags(search)]
        outcome = run_cli_in_process(*args, env=env, stderr=err)
        client.join(timeout=10)
    [done] = answers
    assert not isinstance(done, Exception), repr(done)
    assert "Stephen King" in (done.choices[0].message.content or "")
    assert (done.model_extra or {})["budget"] == 20_000
    assert outcome.returncode == 130, outcome.stderr  # Ctrl-C, as for a research run
    banner, _, rest = outcome.stderr.partition("\n")
    assert "Traceback" not in rest
    [line, stopped] = [line for line in rest.splitlines() if line.strip()]
    assert stopped == "deepsearch serve: shutting down (SIGINT: idle)"
    assert "status=200" in line and SECRET not in rest and "srv-key" not in banner + rest
