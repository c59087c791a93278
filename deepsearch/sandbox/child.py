"""Bootstrap that runs *inside* the sandboxed interpreter (``python -I -S -B -c <this source>``).

It reads one JSON request from stdin (``code``, ``data``, ``workdir``, ``envelope_fd``,
``max_chars``, ``seccomp``: the filter program, ``hook_source``: ``hook.py``'s text),
installs the seccomp filter, then the audit hook, runs the code with ``data`` in its
globals, and writes a JSON envelope (``result``/``error``) to a dedicated file descriptor,
so nothing the code prints on stdout can forge it.

By the time this runs, the kernel's layers are in place (``isolation.py``): a new root
holding only the system's read-only files and an empty work tmpfs, no network, no
capabilities, its own pid namespace. The filter and the hook are added here, before the
first line of the code. The hook is a second layer, not the boundary (PEP 578 says so).

Only the standard library may be imported here: ``-S`` removes site-packages.
"""

from __future__ import annotations

import builtins
import json
import os
import sys

TYPE_CHECKING = False  # typing is not imported at run time: the child starts lean
if TYPE_CHECKING:
    from typing import Any

_TZ_ROOTS = ("/usr/share/zoneinfo", "/usr/lib/zoneinfo", "/usr/share/lib/zoneinfo", "/etc/zoneinfo")


def _describe(exc: BaseException) -> str:
    """One line: 'blocked: ...', 'memory: ...' or 'Type: message (line N)'."""
    message = str(exc)
    if isinstance(exc, PermissionError) and message.startswith("blocked:"):
        return message
    if isinstance(exc, MemoryError):
        return "memory: MemoryError (the memory limit was reached)"
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    tb = exc.__traceback__
    if line is None and tb is not None and tb.tb_next is not None:
        line = tb.tb_next.tb_lineno  # the first frame after this bootstrap's exec()
    where = f" (line {line})" if line else ""
    return f"{type(exc).__name__}: {message}{where}"[:2000]


def _render(value: object, max_chars: int) -> str:
    text = value if isinstance(value, str) else repr(value)
    return (
        text
        if len(text) <= max_chars
        else text[:max_chars] + f"... [truncated {len(text) - max_chars} chars]"
    )


def _run(code: str, data: object, max_chars: int) -> dict[str, object]:
    namespace: dict[str, object] = {
        "__name__": "__main__",
        "__builtins__": __builtins__,
        "data": data,
    }
    saved_builtins = dict(vars(builtins))
    failure: BaseException | None = None
    try:
        exec(compile(code, "<code>", "exec"), namespace)  # running it is the point of the sandbox
    except BaseException as exc:  # every failure becomes the reported error
        failure = exc
    # The code may have rebound builtins (isinstance, str...) that the reporting below uses.
    saved_builtins["vars"](builtins).update(saved_builtins)
    error: str | None = None
    if isinstance(failure, SystemExit):
        error = None if failure.code in (None, 0) else f"SystemExit: {failure.code}"
    elif failure is not None:
        error = _describe(failure)
    result: str | None = None
    for name in ("result", "output"):
        if name in namespace:
            try:
                result = _render(namespace[name], max_chars)
            except BaseException as exc:  # a broken __repr__ is the code's error
                error = error or f"could not render `{name}`: {type(exc).__name__}: {exc}"
            break
    return {"result": result, "error": error}


def _install_filter(program_hex: str) -> None:
    """no_new_privs, then the parent's seccomp program (``seccomp.py``), via ctypes.

    ctypes is loaded only here, before the audit hook exists, and dropped from
    ``sys.modules`` afterwards; every later ctypes call is an audited ``ctypes.*`` event,
    which the hook denies.
    """
    import ctypes

    program = bytes.fromhex(program_hex)

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = Program(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    ulong = ctypes.c_ulong
    if prctl(38, ulong(1), ulong(0), ulong(0), ulong(0)) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
    # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
    if prctl(22, ulong(2), ctypes.byref(fprog), ulong(0), ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter refused")
    for name in [m for m in sys.modules if m == "ctypes" or m.startswith(("ctypes.", "_ctypes"))]:
        del sys.modules[name]


def _close_unwatched_doors(denied: frozenset[str]) -> None:
    """Functions that start no audit event: gone, or checked by name first."""
    import _imp
    import posix

    for module in (os, posix):
        for name in ("mkfifo", "mknod", "makedev"):
            if hasattr(module, name):
                delattr(module, name)
    create_builtin, perm_error = _imp.create_builtin, PermissionError

    def checked_create_builtin(spec: Any) -> Any:
        name = getattr(spec, "name", "")
        for part in str(name).split("."):
            if part in denied:
                raise perm_error(f"blocked: builtin module {name}")
        return create_builtin(spec)

    _imp.create_builtin = checked_create_builtin


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    if request.get("seccomp"):
        try:
            _install_filter(request["seccomp"])
        except OSError as exc:  # fail closed: no code runs without the filter it asked for
            _report(int(request["envelope_fd"]), {"result": None, "error": f"sandbox: {exc}"})
    policy: dict[str, object] = {"__name__": "deepsearch_sandbox_hook"}
    exec(compile(request["hook_source"], "<hook>", "exec"), policy)  # the parent's hook.py
    hooked = request.get("hook", True)  # off only in tests of the kernel's layers alone
    # Without the hook no module is refused by name either: where the interpreter has
    # `_socket` built in (Debian's python3), the name check would stop the socket the
    # kernel's layers are there to stop, and those tests would prove nothing.
    _close_unwatched_doors(policy["_DENIED_MODULES"] if hooked else frozenset())  # type: ignore[arg-type]
    make_hook = policy["make_hook"]
    workdir = os.path.realpath(request["workdir"])
    # -I -S: sys.path is the standard library only; zoneinfo reads the system tz database.
    read_roots = tuple(os.path.realpath(p) for p in (*sys.path, *_TZ_ROOTS) if p)
    envelope_fd = int(request["envelope_fd"])
    os.chdir(workdir)
    # Cached .pyc files are loaded with marshal, which the hook denies (crafted bytecode can
    # corrupt memory); pointing the cache elsewhere makes imports compile from source.
    sys.pycache_prefix = os.path.join(workdir, ".no-pycache")
    sys.modules.pop("_signal", None)  # signal handlers could ignore the CPU-limit signal
    if hooked:
        sys.addaudithook(make_hook(workdir, read_roots))  # type: ignore[operator]
    envelope = _run(request["code"], request["data"], int(request["max_chars"]))
    try:
        payload = json.dumps(envelope).encode("utf-8")
    except BaseException as exc:  # e.g. MemoryError while encoding
        payload = json.dumps({"result": None, "error": _describe(exc)}).encode("utf-8")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass  # the code closed or replaced it
    _write_all(envelope_fd, payload)
    os._exit(0)  # skip atexit handlers the code may have registered


def _write_all(fd: int, payload: bytes) -> None:
    while payload:
        payload = payload[os.write(fd, payload) :]


def _report(envelope_fd: int, envelope: dict[str, object]) -> None:
    """Report before any code ran, and end."""
    _write_all(envelope_fd, json.dumps(envelope).encode("utf-8"))
    os._exit(3)


if __name__ == "__main__":
    main()
