"""Hermetic test environment: no real keys, no user config, a private cache, and no
network except loopback (a Python-level guard; the suite must pass offline)."""

from __future__ import annotations

import gc
import ipaddress
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from deepsearch.sandbox.runner import Isolation, IsolationPlan

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
    "DEEPSEARCH_DATA_DIR",
    "XDG_DATA_HOME",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
]

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"


class _Hermetic:
    """The environment every test starts from, set up once per process (each xdist
    worker): no real keys, no user config, a private HOME per test. Per test this is a
    few dictionary writes (hooks below, not fixtures): the fixture machinery, a
    monkeypatch of ~25 variables and a ``mkdtemp`` per test cost ~2 ms, and removing
    those folders later ~2 ms more, times ~2,000 tests."""

    def __init__(self) -> None:
        self.root: Path | None = None  # the session's folder (start_session)
        self.data_root: Path | None = None  # the run history's (start_session)
        self.count = 0
        self.baseline_data: dict[bytes, bytes] = {}  # os.environ's, encoded

    def start_session(self) -> None:
        # A folder of the session's own, made here and not at import: mutmut (`make
        # mutate`) runs pytest several times in one process, and in processes forked
        # from one that imported this file; a shared folder was removed by one session
        # under another's feet, and two sessions' `home1` were the same folder.
        self.root = Path(tempfile.mkdtemp(prefix="deepsearch-tests-"))
        # The run history every research run keeps (docs/history.md): on a RAM disk
        # where there is one, where SQLite's fsync is free (~30 ms a new file on disk).
        self.data_root = _ram_folder() or self.root
        self.count = 0
        for var in _SCRUBBED_ENV:
            os.environ.pop(var, None)
        os.environ["NO_COLOR"] = "1"
        # Every HTTP client (each SDK, reader, search provider) builds an SSL context and
        # loads the whole CA bundle into it: ~30-100 ms each, hundreds of times a suite
        # (the largest CPU cost of an eval test). Tests never speak TLS (loopback http
        # only, see _guard_connect): a one-certificate bundle is as good and costs nothing.
        os.environ["SSL_CERT_FILE"] = str(_one_cert_bundle(self.root))
        self.baseline_data = dict(os.environ._data)  # type: ignore[attr-defined]

    def start_test(self) -> None:
        """A HOME of the test's own, not created: a test that writes there (a config,
        the cache) makes it, and nothing else pays for a folder it never uses."""
        self.count += 1
        assert self.root is not None, "a test before the session started"
        home = f"{self.root}/home{self.count}"  # strings, not Paths: ~2,600 times a suite
        env = os.environ
        env["HOME"] = home
        env["XDG_CACHE_HOME"] = f"{home}/.cache"
        env["DEEPSEARCH_CACHE_DIR"] = f"{home}/.cache/deepsearch"
        # The run history (docs/history.md): never the user's own data directory.
        env["XDG_DATA_HOME"] = f"{home}/.local/share"
        env["DEEPSEARCH_DATA_DIR"] = f"{self.data_root}/data{self.count}"

    def end_test(self) -> None:
        """Back to the session's environment, whatever the test changed directly.
        Compared as os.environ keeps it (encoded bytes): iterating os.environ decodes
        every name, ~16 us a test; only what differs is decoded and restored."""
        env = os.environ
        now: dict[bytes, bytes] = env._data  # type: ignore[attr-defined]
        baseline = self.baseline_data
        if now == baseline:
            return
        for name in [name for name in now if name not in baseline]:
            del env[os.fsdecode(name)]
        for name, value in baseline.items():
            if now.get(name) != value:
                env[os.fsdecode(name)] = os.fsdecode(value)


def _ram_folder() -> Path | None:
    shm = _ram_disk()
    return None if shm is None else Path(tempfile.mkdtemp(prefix="deepsearch-tests-data-", dir=shm))


def _ram_disk() -> Path | None:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


def _tmp_path_in_ram() -> None:
    """pytest's tmp_path folders (~700 tests use one) on the RAM disk where there is
    one, unless the caller chose a root: on this machine's ext4 /tmp, creating them and
    removing an earlier run's (pytest keeps three) cost ~0.5 s of system CPU a suite.
    Read by pytest in the process that makes the base folder: the xdist controller."""
    shm = _ram_disk()
    if shm is not None:
        os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", str(shm))


_HERMETIC = _Hermetic()
_LOADED_BEFORE: set[str] = set()


def pytest_configure(config: pytest.Config) -> None:
    """A shell without job control starts a background job (`make test &`, a CI step)
    with SIGINT ignored, and children inherit that: asyncio.run then installs no Ctrl-C
    handler, the Ctrl-C golden path's child ignores the signal until its stalled reply
    times out, and uvicorn's re-raised SIGINT does nothing. That was the "flaky under
    load" signal tests. Tests start from Python's own default, as a terminal gives."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _tmp_path_in_ram()  # before the session's environment is taken as its baseline
    _HERMETIC.start_session()
    # Loaded by an earlier session in this process (mutmut runs pytest several times in
    # one), not by this collection.
    _LOADED_BEFORE.update(n for n in _NOT_AT_COLLECTION if n in sys.modules)
    _guard_connect()
    # Collection (every worker's) builds objects that live as long as the process: the
    # test modules, their fixtures and parameters, the code they import. Collected as
    # usual, that was ~250 collections over the growing heap, freeing next to nothing:
    # ~0.4 s of CPU a process. No collection until it is over, then one (below).
    gc.disable()
    if hasattr(config, "workerinput"):  # an xdist worker of a quiet run: fewer messages
        from tests.xdist_lean import send_only_what_is_read

        send_only_what_is_read(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` without its quadratic bookkeeping, its tests sent a few at a
    time (tests/xdist_counting.py)."""
    if config.getoption("dist", None) != "loadgroup":
        return None
    from tests.xdist_counting import BatchedLoadGroup

    return BatchedLoadGroup(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    import atexit
    import shutil

    atexit.unregister(_exit_without_a_last_collection)  # once, however many sessions
    atexit.register(_exit_without_a_last_collection)
    if _HERMETIC.root is not None:
        shutil.rmtree(_HERMETIC.root, ignore_errors=True)
        _HERMETIC.root = None
    if _HERMETIC.data_root is not None:
        shutil.rmtree(_HERMETIC.data_root, ignore_errors=True)
        _HERMETIC.data_root = None


def _exit_without_a_last_collection() -> None:
    """The interpreter's teardown collects the whole heap: ~0.3 s for a worker that
    imported the SDKs, on the path of the run's end (the controller waits for each
    worker to exit). Run as the process exits, after pytest's own last collection (its
    check for unraisable exceptions): everything still alive is frozen, out of the
    teardown's scan, and the operating system takes the memory back."""
    gc.freeze()


_WATCHED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def _one_cert_bundle(folder: Path) -> Path:
    """The first certificate of certifi's bundle, in a file of its own (once a session)."""
    import certifi

    pem = Path(certifi.where()).read_text("ascii")
    end = "-----END CERTIFICATE-----"
    first = pem[pem.index("-----BEGIN CERTIFICATE-----") : pem.index(end) + len(end)]
    path = folder / "one-cert.pem"
    path.write_text(first + "\n", "ascii")
    return path


_PROBED: dict[str, object] = {}
_REAL_PROBE: list[Any] = []


def _probe_for(item: pytest.Item) -> None:
    """Every research run probes sandbox isolation by starting a few child processes
    (~75 ms); the machine's answer cannot change within a session, so outside
    tests/sandbox (which tests the probing itself) it is asked once and reused."""
    from deepsearch.sandbox import runner

    if not _REAL_PROBE:
        _REAL_PROBE.append(runner.probe_isolation)
    runner.probe_isolation = _REAL_PROBE[0] if "sandbox" in item.path.parts else _probed_once


def _probed_once(isolation: Isolation) -> IsolationPlan:
    """The real probe's plan for `isolation`, asked the first time only (a copy each time)."""
    from deepsearch.sandbox.runner import IsolationPlan

    if isolation not in _PROBED:
        _PROBED[isolation] = _REAL_PROBE[0](isolation)
    plan = _PROBED[isolation]
    assert isinstance(plan, IsolationPlan)
    return plan.model_copy()


class _TestState:
    """What a test found when it started, checked when it ends."""

    def __init__(self) -> None:
        self.handlers = {sig: signal.getsignal(sig) for sig in _WATCHED_SIGNALS}
        from tests.fakes.steps import checked_scripts

        self.scripts_block = checked_scripts()
        self.scripts = self.scripts_block.__enter__()


_STATE: dict[str, _TestState] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before the test's fixtures: its own HOME, the session's probe rule, and a record
    of the signal handlers and step scripts to check at the end."""
    if item.nodeid in _LOST_GROUP:
        pytest.fail("--dist loadgroup could not give this test its xdist group (see _grouped)")
    _HERMETIC.start_test()
    if "MUTANT_UNDER_TEST" in os.environ:  # `make mutate`
        _forget_memoized()
    _probe_for(item)
    _STATE[item.nodeid] = _TestState()


def _forget_memoized() -> None:
    """Under mutmut: empty the package's lru_caches before each test. mutmut runs, for
    a mutated function, only the tests it saw call it; a memoized function (a converted
    schema, the refusals table) is called by the first test only, so the others were
    never run against its mutants, and a mutant behind a warm cache never ran at all."""
    for name, module in list(sys.modules.items()):
        if name.startswith("deepsearch") and module is not None:
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear) and not isinstance(value, type):  # a class's is unbound
                    clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """After the test's fixtures are torn down: the environment, the connection guard
    and signal handlers are the session's again; a test that left handlers installed
    or did not follow its agent script fails here."""
    try:
        return (yield)
    finally:
        _HERMETIC.end_test()
        _sse_exit_forgotten()
        if socket.socket.connect is not _GUARDED[0] or socket.socket.connect_ex is not _GUARDED[1]:
            socket.socket.connect, socket.socket.connect_ex = _GUARDED  # type: ignore[method-assign]
        _collector_released()
        state = _STATE.pop(item.nodeid, None)
        if state is not None:
            _check_state(state)


def _sse_exit_forgotten() -> None:
    """sse-starlette (under the MCP SDK) wraps uvicorn's signal handler to set a
    process-wide "the server is exiting" flag that nothing clears: after a test stopped
    an in-process server with a signal, every later MCP stream of the worker ended at
    once and its client waited forever (test_http after test_shutdown, one worker)."""
    sse = sys.modules.get("sse_starlette.sse")
    if sse is not None:
        sse.AppStatus.should_exit = False


def _collector_released() -> None:
    """A test that runs the console script's `main` in process, with its run stubbed,
    holds the collector (deepsearch/collector.py) and never settles it: the raised
    thresholds and the saved ones would last into every later test of the worker."""
    collector = sys.modules.get("deepsearch.collector")
    if collector is not None and collector._saved:
        gc.set_threshold(*collector._saved.pop())


def _check_state(state: _TestState) -> None:
    """A test that leaves a signal handler installed changes how every later test's
    Ctrl-C unwinds (asyncio.run only installs its own SIGINT handler over the default
    one): that surfaced as order-dependent flakes. Fail the leaking test, repair.
    Every step script a test builds (tests/fakes/steps.py) was used exactly: no step
    asked for beyond it, none left over."""
    before = state.handlers
    leaked = [sig for sig, old in before.items() if signal.getsignal(sig) is not old]
    for sig in leaked:  # only those: each signal.signal is a system call
        signal.signal(sig, before[sig])
    state.scripts_block.__exit__(None, None, None)
    assert not leaked, f"the test left signal handlers installed: {[s.name for s in leaked]}"
    problems = [problem for script in state.scripts for problem in script.problems()]
    if problems:
        pytest.fail("the agent's script was not followed: " + "; ".join(problems))


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


def _guard_connect() -> None:
    """Refuse any Python-level connection that is not to loopback (installed once per
    process; put back after any test that replaced it)."""
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

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
    _GUARDED[:] = [guarded_connect, guarded_connect_ex]


_GUARDED: list[Any] = []


@pytest.fixture
def shared_dir() -> Path:
    """../shared (read-only data); tests that need it skip cleanly when it is absent."""
    if not SHARED_DIR.is_dir():
        pytest.skip("../shared is not present (fresh clone)")
    return SHARED_DIR


# ~0.3-1.5 s of CPU each to import (warm .pyc), paid by a worker that runs a test using it.
_NOT_AT_COLLECTION = (
    "openai",
    "mcp",
    "google.genai",
    "uvicorn",
    "starlette",
    "trafilatura",
    "tiktoken",
)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (the SDKs' and pydantic's types, every test module) lives
    until the session ends: frozen out of the collector's reach, each full collection
    during the run no longer walks it (measured ~5-10% less CPU for a worker). Frozen
    as it is, with collection's own garbage (~50k objects, a few MB a worker, never
    freed): collecting it first was a full pass over the heap, ~90 ms a worker.
    Collection imports none of the heavy SDKs: every worker collects the whole suite,
    and one of them at module level in any test file costs every worker its import."""
    loaded = [n for n in _NOT_AT_COLLECTION if n in sys.modules and n not in _LOADED_BEFORE]
    if loaded:
        raise pytest.UsageError(
            f"collection imported {', '.join(loaded)}: import it in the tests that use it"
        )
    gc.freeze()
    # A young collection every 10k net allocations instead of 700 (the older ones rarer
    # too): the tests make and drop many short-lived objects (each run's session,
    # pydantic models, SDK responses), and ~800 collections a worker cost ~0.5 s of CPU
    # while freeing little. No test depends on when the collector runs.
    gc.set_threshold(10_000, 20, 20)
    gc.enable()  # off since pytest_configure


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Live tests talk to real providers: skipped unless DEEPSEARCH_LIVE=1. The tests
    that import a heavy SDK in this process land on one xdist worker per SDK (`make
    test` runs --dist loadgroup), so one worker pays each import instead of every one."""
    for item in items:
        group = _sdk_group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    _grouped(config, items)
    if os.environ.get("DEEPSEARCH_LIVE") == "1":
        return
    skip = pytest.mark.skip(reason="live test: set DEEPSEARCH_LIVE=1 and a provider key to run")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


def _grouped(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--dist loadgroup learns a test's group from its node id: the worker appends
    "@group" (xdist's own collection hook, which runs before this one and so never saw
    the marks added above). pytest 9.2 keeps the id in a structured `_id` and ignores
    xdist's write to `_nodeid`: no group was kept, silently (pytest-xdist issue #1386,
    open for xdist 3.8). So the suffix is written here, for the marks of the test files
    (tests/sandbox) and ours alike, and checked: a test whose group is lost fails
    (pytest_runtest_setup) instead of quietly running on any worker."""
    if not getattr(config.option, "loadgroup", False):  # set in a worker of --dist loadgroup
        return
    for item in items:
        marks = item.iter_markers("xdist_group")
        names = sorted(
            {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks}
        )
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            _rename(item, item.nodeid + suffix)
        if names and not item.nodeid.endswith(suffix):
            _LOST_GROUP.add(item.nodeid)


_LOST_GROUP: set[str] = set()


def _rename(item: pytest.Item, nodeid: str) -> None:
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2
    except ImportError:  # older pytest reads the string xdist writes
        item._nodeid = nodeid
    else:
        item._id = NodeId.parse(nodeid)


# What a first import costs a worker (CPU, warm .pyc): google-genai ~1 s; the openai SDK
# ~1 s (~860 pydantic models), imported for the SDK's client in tests/server, by
# `doctor` (its ping) and for embeddings; the MCP SDK with its Starlette and uvicorn
# ~0.8 s. Which tests import which was measured by running each in a forked child of
# a collected process. The rules below read the test's code (its fixtures, the names
# and strings of its body): a test they miss still passes, it only imports the SDK on
# another worker too; one they take needlessly only runs on that SDK's worker.
_GEMINI_NAMES = frozenset({"FakeGeminiServer", "gemini_client", "google"})
_OPENAI_SDK_NAMES = frozenset(
    {"openai", "AsyncOpenAI", "client", "ping", "embed", "embed_with_usage", "_doctor"}
)
_MCP_SDK_NAMES = frozenset({"McpConfig", "http_app", "_front_ends", "_redactors"})
# A test that starts the command line as a child process pays its imports in the
# child: it stays out of the groups, so its wait overlaps the SDK worker's tests.
_CHILD_NAMES = frozenset({"subprocess", "Popen"})


def _sdk_group(item: pytest.Item) -> str | None:
    """The SDK group of a test that imports one in this process, or None."""
    code = getattr(getattr(item, "function", None), "__code__", None)
    names = frozenset(code.co_names) if code is not None else frozenset()
    if "gemini_server" in getattr(item, "fixturenames", ()) or names & _GEMINI_NAMES:
        return "google-genai"  # 27 tests, the same the import hook sees at run time
    folder = item.path.parent.name if item.path.parent.parent.name == "tests" else ""
    if names & _CHILD_NAMES:
        return None
    if folder == "mcp_server":  # none imports the openai SDK (its `client` is MCP's)
        return "mcp-sdk"
    strings = code.co_consts if code is not None else ()
    if folder == "server" or "doctor" in strings or names & _OPENAI_SDK_NAMES:
        return "openai-sdk"
    if names & _MCP_SDK_NAMES:
        return "mcp-sdk"
    return None
