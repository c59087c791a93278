"""One rule for replacing known secret values (config.redaction.redact_secrets), one
mask (`****`), and every place that replaces them honours its minimum length and its
order: a placeholder key such as `OPENAI_API_KEY=x` (usual for keyless local servers)
must not mask every "x", and a secret that contains another is masked whole."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deepsearch.cassettes.store import Redactor
from deepsearch.config import MIN_SECRET_LENGTH, SECRET_MASK, load_config, redact_secrets
from deepsearch.errors import ProviderError
from deepsearch.llm.provider_common import one_line
from deepsearch.server.state import ServerConfig
from deepsearch.tracing import TraceWriter
from tests.cli.inprocess import run_cli_in_process
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers

SHORT = "x" * (MIN_SECRET_LENGTH - 1)
LONG = "sk-long-enough-secret"
SERVER_TEXT = "text expected, got xxxxxxx in response_format"


def test_only_values_of_the_minimum_length_are_replaced() -> None:
    assert redact_secrets("texxxxxxxt x", ["x", SHORT]) == "texxxxxxxt x"
    assert redact_secrets("key xxxxxxxx!", ["x" * MIN_SECRET_LENGTH]) == "key ****!"
    # Longest first: a secret that contains another is replaced whole.
    assert redact_secrets("a sk-long-enough-secret b", ["sk-long-enough", LONG]) == "a **** b"


def _redactors(tmp_path: Path, secrets: list[str]) -> dict[str, Callable[[str], str]]:
    """Every place that masks a list of secrets, each given `secrets` (in this order)."""
    # Imported here, not at the top: the MCP SDK costs ~1 s to import, which every
    # worker would pay while collecting the suite.
    from deepsearch.mcp_server.app import McpConfig

    trace = TraceWriter(tmp_path / "t.jsonl", secrets=secrets)
    trace._file.close()  # redact() writes nothing
    return {
        "one_line": lambda text: one_line(text, secrets=secrets),
        "mcp": McpConfig(options={}, max_budget=100_000, secrets=secrets).mask,
        "cassette": Redactor(secrets).text,
        "trace": trace.redact,
    }


def test_every_redactor_honours_the_minimum_with_the_one_mask(tmp_path: Path) -> None:
    text = f"error: {SERVER_TEXT} (key {LONG})"
    kept = f"error: {SERVER_TEXT} (key {SECRET_MASK})"
    for where, redact in _redactors(tmp_path, ["x", SHORT, LONG]).items():
        assert redact(text) == kept, where
    settings = load_config(environ={"OPENAI_API_KEY": "x"}).settings
    server = ServerConfig(settings=settings, max_budget=100_000, api_key=LONG)
    assert server.mask(text) == kept


@pytest.mark.parametrize("where", ["one_line", "mcp", "cassette", "trace"])
def test_a_secret_that_contains_another_is_masked_whole(where: str, tmp_path: Path) -> None:
    """Item 9 of issue 19: longest first, whatever order the secrets come in (the
    shorter one first here: replacing it first would leave the longer one's tail)."""
    inner = LONG[:14]  # "sk-long-enough", itself long enough to be a secret
    redact = _redactors(tmp_path, [inner, LONG])[where]
    assert redact(f"a {LONG} b {inner} c") == f"a {SECRET_MASK} b {SECRET_MASK} c"


@pytest.fixture
def search() -> Iterator[FakeSearchServers]:
    with FakeSearchServers() as servers:
        yield servers


def test_a_placeholder_key_leaves_provider_errors_readable() -> None:
    """The provider's own error text (what `doctor` and a failed run print)."""
    from deepsearch.llm.openai_provider import OpenAIProvider
    from tests.llm.helpers import ASK, openai_client

    async def call(srv: FakeOpenAIServer) -> str:
        client, _ = openai_client(srv.base_url)
        client.provider = OpenAIProvider(api_key="x", base_url=srv.base_url, max_retries=0)
        try:
            await client.generate_text("agent", "system", ASK)
        except ProviderError as exc:
            return str(exc)
        finally:
            await client.aclose()
        raise AssertionError("the call should have failed")

    with FakeOpenAIServer() as srv:
        srv.enqueue(Reply.error(500, SERVER_TEXT))
        message = asyncio.run(call(srv))
    assert SERVER_TEXT in message, message


def test_doctor_with_a_placeholder_key_prints_the_server_message(
    search: FakeSearchServers,
) -> None:
    with FakeOpenAIServer(handler=lambda body: Reply.error(400, SERVER_TEXT)) as srv:
        done = run_cli_in_process(
            "doctor",
            "--json",
            env={
                "OPENAI_API_KEY": "x",
                "OPENAI_BASE_URL": srv.base_url,
                "DEEPSEARCH_SEARCH_PROVIDER": "searxng",
                "SEARXNG_URL": search.base_url("searxng"),
            },
        )
    rows = {row["name"]: row["detail"] for row in json.loads(done.stdout)["checks"]}
    assert "text expected" in rows["structured output"], rows


def test_a_user_pass_url_gives_its_password_and_basic_credential_to_every_mask() -> None:
    """Issue 31: the `Basic` credential of a `user:pass@` URL is masked wherever a key is
    (serve, mcp, --trace, cassettes, doctor all take Settings.secret_values())."""
    import base64

    environ = {
        "OPENAI_API_KEY": LONG,
        "OPENAI_BASE_URL": "http://deploy:pa%24%24word-llm@llm.internal/v1",
        "SEARXNG_URL": "http://s:search-pass-123@searx.internal/",
    }
    settings = load_config(environ=environ).settings
    secrets = settings.secret_values()
    llm_basic = base64.b64encode(b"deploy:pa$$word-llm").decode()
    search_basic = base64.b64encode(b"s:search-pass-123").decode()
    assert {LONG, "pa$$word-llm", "search-pass-123", llm_basic, search_basic} <= set(secrets)
    server = ServerConfig(settings=settings, max_budget=100_000)
    echoed = f"401: Authorization: Basic {llm_basic} / Basic {search_basic}"
    assert server.mask(echoed) == "401: Authorization: Basic **** / Basic ****"
