"""Hermetic test environment: no real keys, no user config, a private cache, and no
network except loopback (a Python-level guard; the suite must pass offline)."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Properties run the same examples every time (derandomized, seeded by the test's
# name), so an example count chosen against known mutants keeps catching them, and
# never against the wall clock: the default 200 ms deadline and the too-slow health
# check fail a correct test on a loaded machine. HYPOTHESIS_PROFILE=explore draws
# fresh examples to hunt for new counterexamples.
settings.register_profile(
    "suite", deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

_SCRUBBED_ENV = [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GEMINI_BASE_URL",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "JINA_API_KEY",
    "BRAVE_API_KEY",
    "SERPER_API_KEY",
    "SEARXNG_URL",
    "DEEPSEARCH_CONFIG",
    "DEEPSEARCH_LLM_PROVIDER",
    "DEEPSEARCH_MODEL",
    "DEEPSEARCH_SEARCH_PROVIDER",
    "DEEPSEARCH_CACHE_DIR",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
]

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(autouse=True)
def hermetic_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for var in _SCRUBBED_ENV:
        monkeypatch.delenv(var, raising=False)
    home = Path(tempfile.mkdtemp(prefix="home", dir=_homes(tmp_path_factory)))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("DEEPSEARCH_CACHE_DIR", str(home / ".cache" / "deepsearch"))
    monkeypatch.setenv("NO_COLOR", "1")
    # Every HTTP client (each SDK, reader, search provider) builds an SSL context and
    # loads the whole CA bundle into it: ~30-100 ms each, hundreds of times a suite
    # (the largest CPU cost of an eval test). Tests never speak TLS (loopback http
    # only, see loopback_only): a one-certificate bundle is as good and costs nothing.
    monkeypatch.setenv("SSL_CERT_FILE", str(_one_cert_bundle(tmp_path_factory)))


_HOMES: list[Path] = []


def _homes(factory: pytest.TempPathFactory) -> Path:
    """One folder (under the session's temporary directory, removed with it) for every
    test's private HOME. `mktemp` numbers its folders by listing the directory each
    time: a call per test made that quadratic (2,000 folders: 5 s of CPU, against 0.15 s
    for `tempfile.mkdtemp` in one folder)."""
    if not _HOMES:
        _HOMES.append(factory.mktemp("homes"))
    return _HOMES[0]


def pytest_configure(config: pytest.Config) -> None:
    """A shell without job control starts a background job (`make test &`, a CI step)
    with SIGINT ignored, and children inherit that: asyncio.run then installs no Ctrl-C
    handler, the Ctrl-C golden path's child ignores the signal until its stalled reply
    times out, and uvicorn's re-raised SIGINT does nothing. That was the "flaky under
    load" signal tests. Tests start from Python's own default, as a terminal gives."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_WATCHED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@pytest.fixture(autouse=True)
def signal_handlers_restored() -> Iterator[None]:
    """A test that leaves a signal handler installed changes how every later test's
    Ctrl-C unwinds (asyncio.run only installs its own SIGINT handler over the default
    one): that surfaced as order-dependent flakes. Fail the leaking test, repair."""
    before = {sig: signal.getsignal(sig) for sig in _WATCHED_SIGNALS}
    yield
    leaked = [sig.name for sig, old in before.items() if signal.getsignal(sig) is not old]
    for sig, old in before.items():
        signal.signal(sig, old)
    assert not leaked, f"the test left signal handlers installed: {leaked}"


_CERT_BUNDLE: list[Path] = []


def _one_cert_bundle(factory: pytest.TempPathFactory) -> Path:
    """The first certificate of certifi's bundle, in a file of its own (once a session)."""
    if not _CERT_BUNDLE:
        import certifi

        pem = Path(certifi.where()).read_text("ascii")
        end = "-----END CERTIFICATE-----"
        first = pem[pem.index("-----BEGIN CERTIFICATE-----") : pem.index(end) + len(end)]
        path = factory.mktemp("ca") / "one-cert.pem"
        path.write_text(first + "\n", "ascii")
        _CERT_BUNDLE.append(path)
    return _CERT_BUNDLE[0]


_PROBED: dict[str, object] = {}


@pytest.fixture(autouse=True)
def sandbox_probed_once(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every research run probes sandbox isolation by starting a few child processes
    (~75 ms); the machine's answer cannot change within a session, so outside
    tests/sandbox (which tests the probing itself) it is asked once and reused."""
    if "sandbox" in request.node.path.parts:
        return
    from deepsearch.sandbox import runner

    real = runner.probe_isolation

    def probed_once(isolation: runner.Isolation) -> runner.IsolationPlan:
        if isolation not in _PROBED:
            _PROBED[isolation] = real(isolation)
        plan = _PROBED[isolation]
        assert isinstance(plan, runner.IsolationPlan)
        return plan.model_copy()

    monkeypatch.setattr(runner, "probe_isolation", probed_once)


_APPS: dict[tuple[bool, str | None], Any] = {}
_COMMANDS: dict[int, tuple[Any, Any]] = {}


@pytest.fixture(scope="session", autouse=True)
def cli_built_once() -> Iterator[None]:
    """Every in-process command line (`cli.run`, Typer's CliRunner) built the Typer app
    and converted it to a Click command: ~8 ms, ~300 times a suite. Both depend on the
    code only (callbacks look up what tests patch when they run), so they are built
    once per kind of app and reused; an app a test builds itself keeps its own."""
    import typer.main
    import typer.testing

    from deepsearch import cli

    real_make_app, real_get_command = cli.make_app, typer.main.get_command

    def app_once(*, full: bool = True, only: str | None = None) -> Any:
        if (full, only) not in _APPS:
            _APPS[full, only] = real_make_app(full=full, only=only)
        return _APPS[full, only]

    def command_once(app: Any) -> Any:
        built = _COMMANDS.get(id(app))
        if built is None or built[0] is not app:
            built = _COMMANDS[id(app)] = (app, real_get_command(app))
        return built[1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "make_app", app_once)
        patch.setattr(typer.main, "get_command", command_once)
        patch.setattr(typer.testing, "_get_command", command_once)
        yield


def _is_loopback(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = address[0]
    else:
        return True  # AF_UNIX and friends
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return str(host) == "localhost"


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse any Python-level connection that is not to loopback."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: object) -> None:
        if not _is_loopback(address):
            raise ConnectionRefusedError(f"tests may only connect to loopback, not {address!r}")
        return real_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: object) -> int:
        if not _is_loopback(address):
            raise ConnectionRefusedError(f"tests may only connect to loopback, not {address!r}")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)


@pytest.fixture
def shared_dir() -> Path:
    """../shared (read-only data); tests that need it skip cleanly when it is absent."""
    if not SHARED_DIR.is_dir():
        pytest.skip("../shared is not present (fresh clone)")
    return SHARED_DIR


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (the SDKs' and pydantic's types, every test module) lives
    until the session ends: frozen out of the collector's reach, each full collection
    during the run no longer walks it (measured ~5-10% less CPU for a worker)."""
    import gc

    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Live tests talk to real providers: skipped unless DEEPSEARCH_LIVE=1."""
    import os

    if os.environ.get("DEEPSEARCH_LIVE") == "1":
        return
    skip = pytest.mark.skip(reason="live test: set DEEPSEARCH_LIVE=1 and a provider key to run")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def agent_steps_used_exactly() -> Iterator[None]:
    """Every step script a test builds (tests/fakes/steps.py) was used exactly: no
    step asked for beyond it, none left over."""
    from tests.fakes.steps import checked_scripts

    with checked_scripts() as scripts:
        yield
    problems = [problem for script in scripts for problem in script.problems()]
    if problems:
        pytest.fail("the agent's script was not followed: " + "; ".join(problems))
