"""The child bootstrap's rules, read in this process (or, for the seccomp filter, in a
fork of it): how an error, a result and an exit are reported, what the bootstrap
closes before the code runs, and that it fails closed. The real sandbox runs this
same file in every test of test_sandbox.py; `make mutate` can only see it here, since a
mutated copy cannot run in the child's isolated interpreter (-I -S: no mutmut there)."""

from __future__ import annotations

import _imp
import builtins
import io
import json
import os
import posix
import socket
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from deepsearch.sandbox import child, seccomp
from deepsearch.sandbox.hook import _DENIED_MODULES

HOOK_SOURCE = Path(child.__file__).with_name("hook.py").read_text("utf-8")


# --- one error line -----------------------------------------------------------------------


def run(code: str, data: object = None, max_chars: int = 50) -> dict[str, object]:
    return child._run(code, data, max_chars)


def test_an_error_is_one_line_naming_its_type_and_the_code_s_line() -> None:
    assert run("x = 1\n\ny = x / 0") == {
        "result": None,
        "error": "ZeroDivisionError: division by zero (line 3)",
    }
    error = run("def f(:\n  pass")["error"]
    assert error == "SyntaxError: invalid syntax (<code>, line 1) (line 1)"


def test_the_line_is_the_code_s_not_a_library_s() -> None:
    error = run("import json\n\njson.loads('{')")["error"]
    assert isinstance(error, str) and error.endswith("(line 3)"), error


def test_a_refusal_is_reported_as_the_hook_said_it() -> None:
    assert run("raise PermissionError('blocked: os.fork')")["error"] == "blocked: os.fork"
    assert run("raise PermissionError('denied')")["error"] == "PermissionError: denied (line 1)"
    assert run("raise OSError('blocked: x')")["error"] == "OSError: blocked: x (line 1)"


def test_running_out_of_memory_is_a_memory_error() -> None:
    assert run("raise MemoryError")["error"] == "memory: MemoryError (the memory limit was reached)"


def test_an_error_line_is_capped() -> None:
    error = run("raise ValueError('v' * 5000)")["error"]
    assert isinstance(error, str) and len(error) == 2000 and error.startswith("ValueError: vv")


def test_an_error_raised_outside_any_code_has_no_line() -> None:
    assert child._describe(KeyError("k")) == "KeyError: 'k'"
    try:
        raise ValueError("here")
    except ValueError as exc:  # one frame only: no line of the code to name
        assert child._describe(exc) == "ValueError: here"


# --- the result -----------------------------------------------------------------------------


def test_the_result_is_the_variable_result_else_output() -> None:
    assert run("result = [1, 'a']\noutput = 'o'") == {"result": "[1, 'a']", "error": None}
    assert run("output = 'o'") == {"result": "o", "error": None}
    assert run("x = 1") == {"result": None, "error": None}
    assert run("result = None\noutput = 'o'")["result"] == "None"


def test_the_result_sees_the_data() -> None:
    assert run("result = data['n'] * 2", {"n": 21})["result"] == "42"
    # Its globals: the data, a main module's name and the builtins, nothing of the bootstrap.
    names = run("result = sorted(globals())")["result"]
    assert names == "['__builtins__', '__name__', 'data']"


def test_a_long_result_is_cut_and_says_by_how_much() -> None:
    assert run("result = 'r' * 50")["result"] == "r" * 50
    assert run("result = 'r' * 53")["result"] == "r" * 50 + "... [truncated 3 chars]"
    assert run("result = ['r' * 60]")["result"] == "['" + "r" * 48 + "... [truncated 14 chars]"


def test_a_result_that_cannot_be_rendered_is_the_code_s_error() -> None:
    code = "class B:\n    def __repr__(self):\n        raise TypeError('no')\nresult = B()"
    assert run(code) == {"result": None, "error": "could not render `result`: TypeError: no"}
    both = "output = 1\n" + code.replace("result = B()", "result = B()\n1/0")
    assert run(both)["error"] == "ZeroDivisionError: division by zero (line 6)"


def test_an_exit_is_an_error_only_with_a_status() -> None:
    assert run("raise SystemExit")["error"] is None
    assert run("import sys; result = 1; sys.exit(0)") == {"result": "1", "error": None}
    assert run("raise SystemExit(2)")["error"] == "SystemExit: 2"
    assert run("raise SystemExit('bye')")["error"] == "SystemExit: bye"


def test_rebound_builtins_are_put_back_before_the_report() -> None:
    before = dict(vars(builtins))
    out = run("import builtins\nbuiltins.isinstance = None\nbuiltins.repr = None\nresult = 1")
    assert out == {"result": "1", "error": None}
    assert dict(vars(builtins)) == before


def test_the_code_runs_as_a_main_module_with_the_real_builtins() -> None:
    assert run("result = __name__")["result"] == "__main__"
    assert run("result = len('ab')")["result"] == "2"


# --- doors closed before the code runs ----------------------------------------------------------


@pytest.fixture
def restored(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Whatever the bootstrap changes in this process, put back afterwards."""
    for module in (os, posix):
        for name in ("mkfifo", "mknod", "makedev"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, getattr(module, name))
    monkeypatch.setattr(_imp, "create_builtin", _imp.create_builtin)
    return monkeypatch


def test_functions_that_start_no_audit_event_are_gone(restored: pytest.MonkeyPatch) -> None:
    child._close_unwatched_doors(frozenset({"_socket"}))
    for module in (os, posix):
        for name in ("mkfifo", "mknod", "makedev"):
            assert not hasattr(module, name), (module.__name__, name)


def test_a_denied_builtin_module_cannot_be_created_by_hand(restored: pytest.MonkeyPatch) -> None:
    created: list[object] = []
    restored.setattr(_imp, "create_builtin", lambda spec: created.append(spec) or "module")
    child._close_unwatched_doors(frozenset({"_socket", "gc"}))
    for name in ("_socket", "gc", "pkg.gc", "gc.x"):
        with pytest.raises(PermissionError, match=f"^blocked: builtin module {name}$"):
            _imp.create_builtin(types.SimpleNamespace(name=name))
    assert created == []
    ok = types.SimpleNamespace(name="_json")
    assert _imp.create_builtin(ok) == "module" and created == [ok]
    assert _imp.create_builtin(object()) == "module"  # no name: nothing denied by name


# --- the bootstrap as a whole -----------------------------------------------------------------


OMIT = object()  # a request key left out


class Exited(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


class Bootstrap:
    """Runs child.main() in this process with what it changes recorded and put back."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, workdir: Path) -> None:
        self.mp, self.workdir = monkeypatch, workdir
        self.hooks: list[Any] = []
        self.filters: list[str] = []
        monkeypatch.chdir(workdir.parent)
        monkeypatch.setattr(sys, "pycache_prefix", None)
        monkeypatch.setitem(sys.modules, "_signal", sys.modules["_signal"])
        monkeypatch.setattr(sys, "addaudithook", self.hooks.append)
        monkeypatch.setattr(child, "_install_filter", self.filters.append)
        self.closed: list[object] = []
        monkeypatch.setattr(child, "_close_unwatched_doors", self.closed.append)

        def exit_(status: int) -> None:
            raise Exited(status)

        monkeypatch.setattr(os, "_exit", exit_)

    def __call__(self, code: str, **request: Any) -> tuple[int, dict[str, object]]:
        read_end, write_end = os.pipe()
        body = {
            "code": code, "data": {"n": 2}, "workdir": str(self.workdir),
            "envelope_fd": write_end, "max_chars": 100, "seccomp": "", "hook": True,
            "hook_source": HOOK_SOURCE, **request,
        }  # fmt: skip
        body = {key: value for key, value in body.items() if value is not OMIT}
        stdin = types.SimpleNamespace(buffer=io.BytesIO(json.dumps(body).encode()))
        self.mp.setattr(sys, "stdin", stdin)
        try:
            with pytest.raises(Exited) as exited:
                child.main()
        finally:
            os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            envelope = json.loads(pipe.read())
        return exited.value.status, envelope


@pytest.fixture
def bootstrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Bootstrap:
    work = tmp_path / "work"
    work.mkdir()
    return Bootstrap(monkeypatch, work)


def test_the_envelope_goes_to_its_own_descriptor_and_the_process_ends_at_once(
    bootstrap: Bootstrap, capsys: pytest.CaptureFixture[str]
) -> None:
    status, envelope = bootstrap("print('{\"result\": \"forged\"}')\nresult = data['n']")
    # os._exit(0): the interpreter ends without running the code's exit handlers.
    assert (status, envelope) == (0, {"result": "2", "error": None})
    assert "forged" in capsys.readouterr().out


def test_the_code_runs_in_its_work_directory_with_no_bytecode_cache_or_signals(
    bootstrap: Bootstrap,
) -> None:
    status, envelope = bootstrap("import os\nresult = os.getcwd()")
    assert envelope["result"] == str(bootstrap.workdir.resolve())
    assert sys.pycache_prefix == str(bootstrap.workdir.resolve() / ".no-pycache")
    assert "_signal" not in sys.modules


def test_the_hook_is_installed_before_the_code_runs(bootstrap: Bootstrap) -> None:
    status, envelope = bootstrap("result = 1")
    assert bootstrap.closed == [_DENIED_MODULES]  # the hook's own list of denied modules
    (hook,) = bootstrap.hooks
    work = str(bootstrap.workdir.resolve())
    hook("open", (work + "/f", "w", 0))  # the work directory is writable
    with pytest.raises(PermissionError, match="^blocked: open /etc/passwd$"):
        hook("open", ("/etc/passwd", "r", 0))
    with pytest.raises(PermissionError, match="^blocked: import socket$"):
        hook("import", ("socket", None))
    stdlib = os.path.dirname(os.__file__)
    hook("open", (stdlib + "/json/__init__.py", "r", 0))  # the standard library is readable
    for zone in ("/usr/share/zoneinfo", "/usr/lib/zoneinfo", "/usr/share/lib/zoneinfo",
                 "/etc/zoneinfo"):  # fmt: skip
        hook("open", (os.path.realpath(zone) + "/UTC", "r", 0))


def test_without_the_hook_only_the_kernel_s_layers_remain(bootstrap: Bootstrap) -> None:
    bootstrap("result = 1", hook=False)
    assert bootstrap.hooks == []
    # and no module refused by its name: a built-in `_socket` meets the kernel's layers
    assert bootstrap.closed == [frozenset()]


def test_a_request_without_the_hook_setting_gets_the_hook(bootstrap: Bootstrap) -> None:
    bootstrap("result = 1", hook=OMIT)
    assert len(bootstrap.hooks) == 1


def test_the_filter_is_installed_when_asked_and_a_refused_filter_runs_no_code(
    bootstrap: Bootstrap, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, envelope = bootstrap("result = 1", seccomp="abcd")
    assert bootstrap.filters == ["abcd"] and status == 0
    bootstrap("result = 1", seccomp="")
    assert bootstrap.filters == ["abcd"]

    def refused(program: str) -> None:
        raise OSError(22, "seccomp filter refused")

    monkeypatch.setattr(child, "_install_filter", refused)
    status, envelope = bootstrap("print('RAN')", seccomp="abcd")
    assert (status, envelope) == (
        3,
        {"result": None, "error": "sandbox: [Errno 22] seccomp filter refused"},
    )
    assert "RAN" not in capsys.readouterr().out and bootstrap.hooks[-1:] != []


def test_an_envelope_that_cannot_be_encoded_is_reported_as_an_error(
    bootstrap: Bootstrap, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = json.dumps
    calls: list[int] = []

    def dumps(value: dict[str, object], **kwargs: Any) -> str:
        if "code" not in value and not calls:  # the envelope, the first time
            calls.append(1)
            raise MemoryError
        return real(value, **kwargs)

    monkeypatch.setattr(child.json, "dumps", dumps)
    status, envelope = bootstrap("result = 1")
    assert (status, envelope) == (
        0,
        {"result": None, "error": "memory: MemoryError (the memory limit was reached)"},
    )


class Unflushable:
    def __init__(self, error: type[BaseException]) -> None:
        self.error = error

    def flush(self) -> None:
        raise self.error("closed")


@pytest.mark.parametrize("error", [OSError, ValueError, AttributeError])
def test_a_closed_or_replaced_stream_does_not_stop_the_report(
    bootstrap: Bootstrap, monkeypatch: pytest.MonkeyPatch, error: type[BaseException]
) -> None:
    monkeypatch.setattr(sys, "stdout", Unflushable(error))
    monkeypatch.setattr(sys, "stderr", Unflushable(error))
    assert bootstrap("result = 1") == (0, {"result": "1", "error": None})


def test_a_large_envelope_is_written_whole(bootstrap: Bootstrap, tmp_path: Path) -> None:
    payload = b"x" * 300_000
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, True)
    import threading

    got = bytearray()

    def drain() -> None:
        with os.fdopen(read_end, "rb") as pipe:
            got.extend(pipe.read())

    reader = threading.Thread(target=drain)
    reader.start()
    child._write_all(write_end, payload)
    os.close(write_end)
    reader.join()
    assert bytes(got) == payload


# --- the seccomp filter, installed in a fork of this process ----------------------------------


def _in_a_fork(program_hex: str, *, prctl_fails: bool = False) -> dict[str, Any]:
    """Install the filter in a forked child; what it could do afterwards. (Called once in
    this process too, with no program: `make mutate` links a test to the functions it
    saw called in this process, not in a fork.)"""
    with pytest.raises(ValueError):  # not a program: refused before anything is installed
        child._install_filter("not hex")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked child
        os.close(read_end)
        seen: dict[str, Any] = {}
        if prctl_fails:  # a kernel that refuses no_new_privs
            import ctypes

            def refuse(*args: object) -> int:
                ctypes.set_errno(1)
                return -1

            ctypes.CDLL = lambda *a, **k: types.SimpleNamespace(prctl=refuse)  # type: ignore[misc,assignment]
        try:
            child._install_filter(program_hex)
            seen["installed"] = True
        except OSError as exc:
            seen["installed"] = str(exc)
        # The package and its native module (numpy's *_ctypes helpers are no part of it).
        names = [m for m in sys.modules if m == "ctypes" or m.startswith(("ctypes.", "_ctypes"))]
        seen["ctypes"] = sorted(names)
        status = Path("/proc/self/status").read_text().splitlines()
        seen |= {k: v.strip() for k, _, v in (x.partition(":") for x in status)
                 if k in ("NoNewPrivs", "Seccomp")}  # fmt: skip
        try:
            socket.socket().close()
            seen["socket"] = "allowed"
        except OSError as exc:
            seen["socket"] = exc.errno
        os.write(write_end, json.dumps(seen).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        seen = json.loads(pipe.read())
    os.waitpid(pid, 0)
    return seen


def test_the_filter_is_in_force_once_installed_and_ctypes_is_forgotten() -> None:
    seen = _in_a_fork(seccomp.build_filter().hex())
    assert seen == {
        "installed": True,
        "ctypes": [],
        "NoNewPrivs": "1",  # set by the bootstrap itself, whatever the wrapper did
        "Seccomp": "2",  # a filter
        "socket": 1,  # EPERM
    }


def test_a_program_the_kernel_refuses_is_an_error_not_a_silent_pass() -> None:
    seen = _in_a_fork("06" * 8)  # an instruction that does not exist
    assert seen["installed"] == "[Errno 22] seccomp filter refused"
    assert (seen["Seccomp"], seen["socket"]) == ("0", "allowed")


def test_a_kernel_that_refuses_no_new_privs_is_an_error() -> None:
    seen = _in_a_fork(seccomp.build_filter().hex(), prctl_fails=True)
    assert seen["installed"] == "[Errno 1] PR_SET_NO_NEW_PRIVS failed"
    assert (seen["Seccomp"], seen["socket"]) == ("0", "allowed")
