"""The audit hook's rules, read in this process: the hook is a plain function of (event,
args), so each rule is checked by calling it as the interpreter would, with no sandbox
started. (The hook's source also runs inside every real sandbox: test_sandbox.py and
the red team prove it there; `make mutate` can only see it here, since a mutated copy
of hook.py cannot run in the child's isolated interpreter.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deepsearch.sandbox.hook import make_hook

STDLIB = "/usr/lib/python3.11"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The code's working directory, as the child's cwd."""
    monkeypatch.chdir(tmp_path)
    return str(tmp_path)


def refusal(hook: object, event: str, args: tuple[object, ...]) -> str | None:
    """The hook's refusal message, or None when it lets the event through."""
    try:
        hook(event, args)  # type: ignore[operator]
    except PermissionError as exc:
        return str(exc)
    return None


# --- events that are refused outright ---------------------------------------------------

REFUSED = [
    "os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.startfile",
    "os.symlink", "os.link", "os.setxattr", "os.removexattr", "os.getxattr", "os.listxattr",
    "os.chflags", "os.lchflags", "pty.spawn", "sys.addaudithook", "sys._current_frames",
    "sys._current_exceptions", "sys.settrace", "sys.setprofile", "code.__new__",
    "marshal.load", "marshal.loads", "resource.setrlimit", "resource.prlimit",
    "signal.pthread_kill", "builtins.breakpoint", "webbrowser.open", "ensurepip.bootstrap",
    "sqlite3.connect", "sqlite3.enable_load_extension", "sqlite3.load_extension",
    # by prefix
    "socket.connect", "socket.getaddrinfo", "ctypes.dlopen", "subprocess.Popen",
    "os.exec", "os.execve", "os.spawn", "os.posix_spawn", "gc.get_objects", "mmap.__new__",
    "fcntl.ioctl", "syslog.openlog", "urllib.Request", "http.client.connect",
    "ftplib.connect", "smtplib.connect", "poplib.connect", "imaplib.open",
    "nntplib.connect", "telnetlib.Telnet.open", "pdb.Pdb", "cpython.run_command",
]  # fmt: skip


@pytest.mark.parametrize("event", REFUSED)
def test_a_program_that_raises_a_door_opening_event_is_refused(work: str, event: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, event, ("x", "y")) == f"blocked: {event} "[:-1]


def test_reading_a_frame_s_door_is_refused_naming_the_attribute(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "object.__getattr__", (object(), "gi_frame")) == (
        "blocked: object.__getattr__ gi_frame"
    )
    assert refusal(hook, "object.__getattr__", (object(),)) == "blocked: object.__getattr__"


def test_events_that_open_no_door_pass(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    for event in ("exec", "compile", "os.getcwd", "sys._getframe", "time.sleep", "socketx"):
        assert refusal(hook, event, ("a", "b")) is None, event


# --- setting a function's inner parts ----------------------------------------------------


@pytest.mark.parametrize("name", ["__code__", "__globals__", "__closure__", "__builtins__"])
def test_setting_a_function_s_code_or_globals_is_refused(work: str, name: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "object.__setattr__", (lambda: 0, name, None)) == f"blocked: set {name}"
    assert refusal(hook, "object.__setattr__", (lambda: 0, name)) == f"blocked: set {name}"


def test_setting_an_ordinary_attribute_is_allowed(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "object.__setattr__", (lambda: 0, "__doc__", "x")) is None
    assert refusal(hook, "object.__setattr__", ("__code__",)) is None  # no attribute named
    assert refusal(hook, "object.__setattr__", ["o", "__code__"]) is None  # not the event's form


# --- files: the work directory and the standard library ----------------------------------


def test_a_sibling_whose_name_starts_with_the_work_directory_s_is_outside_it(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "open", (work + "2/x", "w", 0)) == f"blocked: open {work}2/x"
    assert refusal(hook, "open", (work + "2", "r", 0)) == f"blocked: open {work}2"
    assert refusal(hook, "open", (STDLIB + "x/os.py", "r", 0)) is not None
    assert refusal(hook, "open", (work, "r", 0)) is None  # the directory itself
    assert refusal(hook, "open", (STDLIB + "/os.py", "r", 0)) is None


def test_the_standard_library_is_read_only(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "open", (STDLIB + "/os.py", "a", 0)) == f"blocked: open {STDLIB}/os.py"
    assert refusal(hook, "os.remove", (STDLIB + "/os.py", None)) == (
        f"blocked: os.remove {STDLIB}/os.py"
    )


@pytest.mark.parametrize("mode", ["w", "wb", "a", "x", "r+", "rb+"])
def test_every_writing_mode_needs_the_work_directory(work: str, mode: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "open", (STDLIB + "/f", mode, 0)) is not None
    assert refusal(hook, "open", (work + "/f", mode, 0)) is None


@pytest.mark.parametrize("flag", ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"])
def test_every_writing_flag_needs_the_work_directory(work: str, flag: str) -> None:
    hook = make_hook(work, (STDLIB,))
    flags = getattr(os, flag)
    assert refusal(hook, "open", (STDLIB + "/f", None, flags)) is not None
    assert refusal(hook, "open", (STDLIB + "/f", "r", os.O_RDONLY)) is None
    assert refusal(hook, "open", (STDLIB + "/f", None, "w")) is None  # flags not an int


def test_a_str_subclass_cannot_lie_about_its_mode_or_path(work: str) -> None:
    class Liar(str):
        def find(self, *args: object) -> int:  # type: ignore[override]
            return -1

        def startswith(self, *args: object) -> bool:  # type: ignore[override]
            return True

        def split(self, *args: object) -> list[str]:  # type: ignore[override]
            return [work]

    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "open", (STDLIB + "/f", Liar("w"), 0)) is not None
    assert refusal(hook, "open", (Liar("/etc/passwd"), "r", 0)) == "blocked: open /etc/passwd"


def test_paths_are_normalized_before_the_check(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    climbing = work + "/a/.." + "/.." * work.count("/") + "/etc/./passwd"
    assert refusal(hook, "open", (climbing, "r", 0)) == "blocked: open /etc/passwd"
    assert refusal(hook, "open", ("/../../etc//passwd", "r", 0)) == "blocked: open /etc/passwd"
    assert refusal(hook, "open", (f"{work}/a/./b/../c", "w", 0)) is None
    assert refusal(hook, "open", (b"/etc/passwd", "r", 0)) == "blocked: open /etc/passwd"
    assert refusal(hook, "open", (work.encode() + b"/\xff", "w", 0)) is None


def test_a_relative_path_is_read_against_the_working_directory(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "open", ("notes.txt", "w", 0)) is None
    assert refusal(hook, "open", ("./sub/notes.txt", "w", 0)) is None
    os.chdir("/")
    assert refusal(hook, "open", ("etc/passwd", "r", 0)) == "blocked: open /etc/passwd"


def test_a_relative_path_that_climbs_is_refused_even_when_it_comes_back(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    name = os.path.basename(work)
    assert refusal(hook, "open", (f"../{name}/x", "r", 0)) == (
        f"blocked: relative path climbing out: ../{name}/x"
    )
    assert (
        refusal(hook, "open", ("a/../x", "w", 0)) == "blocked: relative path climbing out: a/../x"
    )


def test_a_path_of_another_type_is_refused(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "open", (Path("/etc/x"), "r", 0)) == (
        "blocked: unsupported path type PosixPath"
    )
    assert refusal(hook, "open", (3.5, "r", 0)) == "blocked: unsupported path type float"


def test_descriptors_may_be_opened_but_not_changed_or_listed(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "open", (3, "w", 0)) is None  # os.fdopen of a descriptor it has
    assert refusal(hook, "open", (None, "r", 0)) is None
    assert refusal(hook, "os.remove", (3, None)) == "blocked: os.remove on a file descriptor"
    assert refusal(hook, "os.chmod", (3, 0o777, None)) == "blocked: os.chmod on a file descriptor"
    assert refusal(hook, "os.listdir", (3,)) == "blocked: os.listdir on a file descriptor"
    assert refusal(hook, "os.scandir", (3,)) == "blocked: os.scandir on a file descriptor"


WRITE_EVENTS = [
    "os.mkdir", "os.rmdir", "os.remove", "os.rename", "os.truncate", "os.utime", "os.chmod",
    "os.chown", "os.chdir", "shutil.rmtree", "shutil.chown", "shutil.copyfile",
    "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move",
    "shutil.make_archive", "shutil.unpack_archive", "tempfile.mkstemp", "tempfile.mkdtemp",
]  # fmt: skip


@pytest.mark.parametrize("event", WRITE_EVENTS)
def test_a_change_to_a_file_needs_the_work_directory(work: str, event: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, event, (STDLIB + "/f", None)) == f"blocked: {event} {STDLIB}/f"
    assert refusal(hook, event, (work + "/f", None)) is None


@pytest.mark.parametrize(
    "event",
    ["os.rename", "shutil.copyfile", "shutil.copytree", "shutil.move", "shutil.unpack_archive"],
)
def test_a_copy_or_move_needs_the_work_directory_at_both_ends(work: str, event: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, event, (work + "/a", "/tmp/b")) == f"blocked: {event} /tmp/b"
    assert refusal(hook, event, (work + "/a", work + "/b")) is None
    assert refusal(hook, event, (work + "/a",)) is None
    # The target is a path in the work directory, never a descriptor it stands for.
    assert refusal(hook, event, (work + "/a", 5)) == f"blocked: {event} on a file descriptor"


def test_only_a_copy_or_move_has_a_second_path(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    # os.chmod's second argument is a mode, os.mkdir's a mode: not paths to check.
    assert refusal(hook, "os.mkdir", (work + "/d", "/tmp/d")) is None
    assert refusal(hook, "os.chmod", (work + "/f", 0o600, None)) is None


@pytest.mark.parametrize("event", ["os.listdir", "os.scandir", "glob.glob", "glob.glob/2"])
def test_listing_reaches_the_work_directory_and_the_standard_library_only(
    work: str, event: str
) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, event, ("/",)) == f"blocked: {event} /"
    assert refusal(hook, event, (STDLIB,)) is None
    assert refusal(hook, event, (work + "/sub",)) is None
    assert refusal(hook, event, (None,)) is None  # the current directory
    assert refusal(hook, event, ()) is None


# --- imports ------------------------------------------------------------------------------

DENIED_IMPORTS = [
    "_ctypes", "_signal", "ctypes", "_posixsubprocess", "subprocess", "_socket", "socket",
    "_ssl", "ssl", "select", "selectors", "mmap", "signal", "gc", "resource", "fcntl",
    "termios", "pty", "tty", "multiprocessing", "_multiprocessing", "_posixshmem", "asyncio",
    "concurrent", "_xxsubinterpreters", "_testcapi", "_testinternalcapi", "_testbuffer",
    "faulthandler", "readline", "sqlite3", "_sqlite3", "pdb", "bdb",
]  # fmt: skip


@pytest.mark.parametrize("name", DENIED_IMPORTS)
def test_importing_a_module_that_opens_a_door_is_refused(work: str, name: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "import", (name, None, None, None, None)) == f"blocked: import {name}"
    assert refusal(hook, "import", (f"pkg.{name}.sub", None)) == (f"blocked: import pkg.{name}.sub")


def test_a_denied_native_module_is_refused_under_any_name(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    so = f"{STDLIB}/lib-dynload/_posixsubprocess.cpython-311-x86_64-linux-gnu.so"
    assert refusal(hook, "import", ("harmless", so)) == "blocked: import harmless"
    assert refusal(hook, "import", (None, so)) == "blocked: import None"
    assert refusal(hook, "import", ("json", f"{STDLIB}/json/__init__.py")) is None
    # A bare file name (a relative origin) is read the same way, then refused as outside.
    assert refusal(hook, "import", ("x", "_posixsubprocess.so")) == "blocked: import x"
    assert refusal(hook, "import", ("x", "x.py")) == f"blocked: import {work}/x.py"


def test_code_is_imported_from_the_standard_library_only(work: str) -> None:
    hook = make_hook(work, (STDLIB,))
    assert refusal(hook, "import", ("evil", work + "/evil.py")) == (
        f"blocked: import {work}/evil.py"
    )
    assert refusal(hook, "import", ("json", None)) is None  # a built-in or frozen module
