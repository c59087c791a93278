"""Bootstrap that runs *inside* the sandboxed interpreter (``python -I -S -B -c <this source>``).

It reads one JSON request from stdin (``code``, ``data``, ``workdir``, ``envelope_fd``,
``max_chars``), installs an audit hook, runs the code with ``data`` in its globals, and
writes a JSON envelope (``result``/``error``) to a dedicated file descriptor, so nothing the
code prints on stdout can forge it.

The audit hook is a second layer, not the boundary (PEP 578 says so): the parent also puts
the child in network/pid/mount namespaces, on a private noexec/nodev tmpfs, under rlimits.
Everything the hook needs is captured in its closure when it is built, because the code it
polices shares this interpreter and could rebind module globals (``os.path.realpath``,
``builtins.str``...) that a hook looked up at call time.

Only the standard library may be imported here: ``-S`` removes site-packages.
"""

from __future__ import annotations

import builtins
import json
import os
import sys

TYPE_CHECKING = False  # typing is not imported at run time: the child starts lean
if TYPE_CHECKING:
    from collections.abc import Callable

# Imports that open a door the hook cannot watch (native code, processes, sockets,
# signals, the garbage collector's view of every object, raw memory).
_DENIED_MODULES = frozenset(
    {
        "_ctypes",
        "_signal",  # dropped from sys.modules before the code runs, so importing it is audited
        "ctypes",
        "_posixsubprocess",
        "subprocess",
        "_socket",
        "socket",
        "_ssl",
        "ssl",
        "select",
        "selectors",
        "mmap",
        "signal",
        "gc",
        "resource",
        "fcntl",
        "termios",
        "pty",
        "tty",
        "multiprocessing",
        "_multiprocessing",
        "_posixshmem",
        "asyncio",
        "concurrent",
        "_xxsubinterpreters",
        "_testcapi",
        "_testinternalcapi",
        "_testbuffer",
        "faulthandler",
        "readline",
        "sqlite3",
        "_sqlite3",
        "pdb",
        "bdb",
    }
)

_DENIED_EVENTS = frozenset(
    {
        "os.system",
        "os.fork",
        "os.forkpty",
        "os.kill",
        "os.killpg",
        "os.startfile",
        "os.symlink",  # no links: a path that looks inside the workdir stays inside it
        "os.link",
        "os.setxattr",
        "os.removexattr",
        "os.getxattr",
        "os.listxattr",
        "os.chflags",
        "os.lchflags",
        "pty.spawn",
        "sys.addaudithook",
        "sys._current_frames",
        "sys._current_exceptions",
        "sys.settrace",
        "sys.setprofile",
        # sys._getframe stays allowed (namedtuple, enum and dataclasses need it); what a frame
        # leads to is denied here instead: gi_frame, tb_frame, f_code, __code__ ...
        "object.__getattr__",
        "code.__new__",  # hand-made bytecode can corrupt memory
        "marshal.load",
        "marshal.loads",
        "resource.setrlimit",  # root could raise its hard limits again
        "resource.prlimit",
        "signal.pthread_kill",
        "builtins.breakpoint",
        "webbrowser.open",
        "ensurepip.bootstrap",
        "sqlite3.connect",
        "sqlite3.enable_load_extension",
        "sqlite3.load_extension",
    }
)

_DENIED_PREFIXES = (
    "socket.",
    "ctypes.",
    "subprocess.",
    "os.exec",
    "os.spawn",
    "os.posix_spawn",
    "gc.",
    "mmap.",
    "fcntl.",
    "syslog.",
    "urllib.",
    "http.",
    "ftplib.",
    "smtplib.",
    "poplib.",
    "imaplib.",
    "nntplib.",
    "telnetlib.",
    "pdb.",
    "cpython.",
)

# Events whose first argument (and for rename, second) is a path that gets modified.
_WRITE_PATH_EVENTS = frozenset(
    {
        "os.mkdir",
        "os.rmdir",
        "os.remove",
        "os.rename",
        "os.truncate",
        "os.utime",
        "os.chmod",
        "os.chown",
        "os.chdir",
        "shutil.rmtree",
        "shutil.chown",
        "shutil.copyfile",
        "shutil.copymode",
        "shutil.copystat",
        "shutil.copytree",
        "shutil.move",
        "shutil.make_archive",
        "shutil.unpack_archive",
        "tempfile.mkstemp",
        "tempfile.mkdtemp",
    }
)
_READ_PATH_EVENTS = frozenset({"os.listdir", "os.scandir", "glob.glob", "glob.glob/2"})
_TWO_PATH_EVENTS = frozenset(
    {"os.rename", "shutil.copyfile", "shutil.copytree", "shutil.move", "shutil.unpack_archive"}
)
_TZ_ROOTS = ("/usr/share/zoneinfo", "/usr/lib/zoneinfo", "/usr/share/lib/zoneinfo", "/etc/zoneinfo")
_SETATTR_DENIED = frozenset({"__code__", "__globals__", "__closure__", "__builtins__"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _normalizer():
    """``normalize(path)``: absolute, lexically normalized path (None for a descriptor)."""
    # Typed loosely on purpose: an alias does not narrow like ``isinstance`` itself.
    join: Callable[..., str] = str.join
    split: Callable[..., list[str]] = str.split
    decode: Callable[..., str] = bytes.decode
    startswith, getcwd, isinstance_, type_ = str.startswith, os.getcwd, isinstance, type
    str_, bytes_, int_, perm_error = str, bytes, int, PermissionError

    def normalize(path: object) -> str | None:
        if isinstance_(path, int_):
            return None
        if isinstance_(path, bytes_):
            text = decode(path, "utf-8", "surrogateescape")
        elif isinstance_(path, str_):
            text = join("", (path,))  # an exact str copy, whatever a subclass overrides
        else:
            raise perm_error(f"blocked: unsupported path type {type_(path).__name__}")
        if not startswith(text, "/"):
            text = join("/", (getcwd(), text))
        parts: list[str] = []
        for part in split(text, "/"):
            if part == "..":
                if parts:
                    parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        return "/" + join("/", parts)

    return normalize


def _path_checker():
    """``check(event, path, roots)``: raise unless the path lies under one of ``roots``."""
    startswith, normalize, perm_error = str.startswith, _normalizer(), PermissionError

    def check(event: str, path: object, roots: tuple[str, ...]) -> None:
        norm = normalize(path)
        if norm is None:
            return
        for root in roots:
            if norm == root or startswith(norm, root + "/"):
                return
        raise perm_error(f"blocked: {event} {norm}")

    return check


def _write_test():
    """``is_write(mode, flags)``: whether an ``open`` event may write."""
    find: Callable[..., int] = str.find
    and_: Callable[..., int] = int.__and__
    isinstance_, str_, int_, write_flags = isinstance, str, int, _WRITE_FLAGS

    def is_write(mode: object, flags: object) -> bool:
        if isinstance_(mode, str_):
            for char in "wax+":
                if find(mode, char) >= 0:  # unbound: a str subclass cannot lie
                    return True
        return isinstance_(flags, int_) and and_(flags, write_flags) != 0

    return is_write


def _file_handlers(workdir: str, read_roots: tuple[str, ...]):
    """Event -> handler for the events that name files (opens, imports, writes, reads)."""
    split: Callable[..., list[str]] = str.split
    isinstance_, str_, len_, perm_error = isinstance, str, len, PermissionError
    denied_modules, two_path = _DENIED_MODULES, _TWO_PATH_EVENTS
    write_roots, all_read_roots = (workdir,), (workdir, *read_roots)
    check, is_write = _path_checker(), _write_test()

    def on_open(event: str, args: tuple[object, ...]) -> None:
        path, mode, flags = args
        if path is not None:
            check(event, path, write_roots if is_write(mode, flags) else all_read_roots)

    def on_import(event: str, args: tuple[object, ...]) -> None:
        name, filename = args[0], args[1]
        if isinstance_(name, str_) and split(name, ".")[0] in denied_modules:
            raise perm_error(f"blocked: import {name}")
        if filename is not None:  # native or source code loads only from the stdlib
            check(event, filename, read_roots)

    def on_write(event: str, args: tuple[object, ...]) -> None:
        check(event, args[0], write_roots)
        if event in two_path and len_(args) > 1 and args[1] is not None:
            check(event, args[1], write_roots)

    def on_read(event: str, args: tuple[object, ...]) -> None:
        if args and args[0] is not None:
            check(event, args[0], all_read_roots)

    handlers = {"open": on_open, "import": on_import}
    handlers |= dict.fromkeys(_WRITE_PATH_EVENTS, on_write)
    handlers |= dict.fromkeys(_READ_PATH_EVENTS, on_read)
    return handlers


def make_hook(workdir: str, read_roots: tuple[str, ...]):
    """Build the audit hook; every helper it uses is bound here, never looked up later."""
    startswith, isinstance_, tuple_, len_ = str.startswith, isinstance, tuple, len
    denied_events, denied_prefixes = _DENIED_EVENTS, _DENIED_PREFIXES
    setattr_denied, perm_error = _SETATTR_DENIED, PermissionError

    def on_setattr(event: str, args: tuple[object, ...]) -> None:
        if isinstance_(args, tuple_) and len_(args) > 1 and args[1] in setattr_denied:
            raise perm_error(f"blocked: set {args[1]}")

    handlers = _file_handlers(workdir, read_roots)
    handlers["object.__setattr__"] = on_setattr
    handler_for = handlers.get  # bound now: the dict itself is reachable from nowhere else

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event in denied_events or startswith(event, denied_prefixes):
            detail = args[1] if event == "object.__getattr__" and len_(args) > 1 else ""
            raise perm_error(f"blocked: {event} {detail}".rstrip())
        handler = handler_for(event)
        if handler is not None:
            handler(event, args)

    return hook


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


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    workdir = os.path.realpath(request["workdir"])
    # -I -S: sys.path is the standard library only; zoneinfo reads the system tz database.
    read_roots = tuple(os.path.realpath(p) for p in (*sys.path, *_TZ_ROOTS) if p)
    envelope_fd = int(request["envelope_fd"])
    os.chdir(workdir)
    # Cached .pyc files are loaded with marshal, which the hook denies (crafted bytecode can
    # corrupt memory); pointing the cache elsewhere makes imports compile from source.
    sys.pycache_prefix = os.path.join(workdir, ".no-pycache")
    sys.modules.pop("_signal", None)  # signal handlers could ignore the CPU-limit signal
    sys.addaudithook(make_hook(workdir, read_roots))
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
    while payload:
        payload = payload[os.write(envelope_fd, payload) :]
    os._exit(0)  # skip atexit handlers the code may have registered


if __name__ == "__main__":
    main()
