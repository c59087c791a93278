"""The audit hook of the sandboxed interpreter: a second layer, not the boundary.

Standard library only: the child (``child.py``) receives this module's source in its
request and runs it before the code, so it must stand alone. It denies the imports and
audit events that open doors (native code, processes, sockets, introspection) and
confines file events to the work directory (writes) and the standard library (reads).
PEP 578 says such a hook is not a security boundary; the kernel's layers are
(``isolation.py``, ``seccomp.py``). Everything the hook uses is captured in closures
when it is built, since the code it polices shares the interpreter.
"""

from __future__ import annotations

import os

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
            # The event does not say whether a dir_fd was given: a relative path may be
            # resolved against any directory, so one that climbs is refused outright.
            for part in split(text, "/"):
                if part == "..":
                    raise perm_error(f"blocked: relative path climbing out: {text}")
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

    def check(event: str, path: object, roots: tuple[str, ...], fd_ok: bool = True) -> None:
        norm = normalize(path)
        if norm is None:
            if fd_ok:
                return
            raise perm_error(f"blocked: {event} on a file descriptor")
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


def _import_checker():
    """``denied(name, filename)``: whether an import loads a denied module under any name."""
    split: Callable[..., list[str]] = str.split
    rsplit: Callable[..., list[str]] = str.rsplit
    isinstance_, str_, denied_modules = isinstance, str, _DENIED_MODULES

    def denied(name: object, filename: object) -> bool:
        # `x._posixsubprocess` loads the same native module as `_posixsubprocess`, and
        # so does any name given to "/.../_posixsubprocess.cpython-311-x86_64-linux-gnu.so".
        parts = split(name, ".") if isinstance_(name, str_) else []
        if isinstance_(filename, str_):
            parts.append(split(rsplit(filename, "/", 1)[-1], ".")[0])
        for part in parts:
            if part in denied_modules:
                return True
        return False

    return denied


def _file_handlers(workdir: str, read_roots: tuple[str, ...]):
    """Event -> handler for the events that name files (opens, imports, writes, reads)."""
    len_, perm_error, two_path = len, PermissionError, _TWO_PATH_EVENTS
    write_roots, all_read_roots = (workdir,), (workdir, *read_roots)
    check, is_write = _path_checker(), _write_test()
    denied_import = _import_checker()

    def on_open(event: str, args: tuple[object, ...]) -> None:
        path, mode, flags = args
        if path is not None:
            check(event, path, write_roots if is_write(mode, flags) else all_read_roots)

    def on_import(event: str, args: tuple[object, ...]) -> None:
        name, filename = args[0], args[1]
        if denied_import(name, filename):
            raise perm_error(f"blocked: import {name}")
        if filename is not None:  # native or source code loads only from the stdlib
            check(event, filename, read_roots)

    def on_write(event: str, args: tuple[object, ...]) -> None:
        check(event, args[0], write_roots, False)
        if event in two_path and len_(args) > 1 and args[1] is not None:
            check(event, args[1], write_roots, False)

    def on_read(event: str, args: tuple[object, ...]) -> None:
        if args and args[0] is not None:
            check(event, args[0], all_read_roots, False)

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
