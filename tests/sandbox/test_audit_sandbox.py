"""Outside mutation audit (issue 37): sandbox behaviours no other test pinned. The
kernel's layers are read from inside ONE sandboxed run without the audit hook (what the
code would find if it got past the hook); the hook and the child's reporting are
checked in-process, on their own functions (nothing is installed in this process)."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from deepsearch.sandbox.isolation import SandboxLimits
from deepsearch.sandbox.runner import Sandbox

pytestmark = pytest.mark.xdist_group("sandbox")

KERNEL_FACTS = """
import os, resource, sys
work = os.statvfs('.')
result = {
    'core': resource.getrlimit(resource.RLIMIT_CORE),
    'work_mb': work.f_blocks * work.f_frsize // 2**20,
    'writable': [p for p in ('/usr', sys.base_prefix) if not os.statvfs(p).f_flag & os.ST_RDONLY],
}
"""


@pytest.fixture(scope="module")
def facts() -> dict[str, object]:
    box = Sandbox(SandboxLimits(file_size_mb=4), audit_hook=False)
    usable, reason = box.availability()
    assert usable, reason  # CI runs as root on Linux: a refusal is a failure
    out = asyncio.run(box.run(KERNEL_FACTS, {}))
    assert out.ok and out.result is not None, (out.error, out.stderr)
    found: dict[str, object] = ast.literal_eval(out.result)
    return found


def test_the_code_can_dump_no_core(facts: dict[str, object]) -> None:
    """A core file would hold the interpreter's memory: the request, the data."""
    assert facts["core"] == (0, 0)


def test_the_work_directory_holds_twice_the_largest_file(facts: dict[str, object]) -> None:
    """isolation.py: the work tmpfs holds at most twice file_size_mb (4 MB here)."""
    assert facts["work_mb"] == 8


def test_the_system_and_the_interpreter_are_read_only_inside(facts: dict[str, object]) -> None:
    """Even where the uid could write there (an ordinary user's own Python), the code
    cannot change the interpreter the next run uses."""
    assert facts["writable"] == []


def _hook(tmp_path: Path) -> Callable[[str, tuple[object, ...]], None]:
    from deepsearch.sandbox.hook import make_hook

    work = tmp_path / "work"
    work.mkdir()
    return make_hook(str(work), ("/usr/lib/python3",))


def test_the_hook_refuses_writes_through_a_file_descriptor(tmp_path: Path) -> None:
    """A descriptor names no path the hook could check (a dir_fd outside the work
    directory): a changing call on one is refused."""
    hook = _hook(tmp_path)
    with pytest.raises(PermissionError, match="blocked: os.chmod on a file descriptor"):
        hook("os.chmod", (3, 0o777, -1))


def test_a_filter_the_kernel_refuses_stops_the_code_before_its_first_line(
    tmp_path: Path,
) -> None:
    """child.py fails closed: no code runs without the seccomp filter it was sent."""
    import json
    import os
    import subprocess
    import sys

    from deepsearch.sandbox import child, hook

    read_end, write_end = os.pipe()
    request = {
        "code": "print('the code ran')", "data": {}, "workdir": str(tmp_path),
        "envelope_fd": write_end, "max_chars": 100,
        "seccomp": "ffff000000000000",  # one instruction of no valid opcode: EINVAL
        "hook": True, "hook_source": Path(hook.__file__).read_text("utf-8"),
    }  # fmt: skip
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-B", "-c", Path(child.__file__).read_text("utf-8")],
            input=json.dumps(request).encode(), capture_output=True, pass_fds=(write_end,),
            timeout=30, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        envelope = json.loads(pipe.read())
    assert b"the code ran" not in done.stdout
    assert done.returncode != 0
    assert envelope["result"] is None and envelope["error"].startswith("sandbox:")


def test_a_denied_native_module_is_refused_under_any_name(tmp_path: Path) -> None:
    """Loading _posixsubprocess's file as "innocent" loads the same native code."""
    hook = _hook(tmp_path)
    so = "/usr/lib/python3/lib-dynload/_posixsubprocess.cpython-311-x86_64-linux-gnu.so"
    with pytest.raises(PermissionError, match="blocked: import innocent"):
        hook("import", ("innocent", so, [], [], []))


async def test_only_the_cap_of_a_flood_of_output_is_kept_and_all_of_it_counted() -> None:
    """Code printing gigabytes must not fill the parent's memory: the first `cap` bytes
    are kept, the rest only counted (for the truncation note)."""
    from deepsearch.sandbox.process import drain

    reader = asyncio.StreamReader()
    for _ in range(3):
        reader.feed_data(b"x" * 70_000)
    reader.feed_eof()
    kept, total = await drain(reader, 1000)
    assert kept == b"x" * 1000
    assert total == 210_000


def test_how_the_code_ended_is_reported_in_one_honest_line() -> None:
    """child.py's report, run in this process on harmless code: sys.exit(0) is a clean
    end, `result` wins over `output`, a MemoryError is said to be the memory limit."""
    from deepsearch.sandbox.child import _describe, _run

    assert _run("import sys\nresult = 'done'\nsys.exit(0)", {}, 100) == {
        "result": "done",
        "error": None,
    }
    assert _run("output = 'printed'\nresult = 'the answer'", {}, 100)["result"] == "the answer"
    assert _describe(MemoryError()).startswith("memory: ")


def test_opening_a_file_to_truncate_it_is_a_write(tmp_path: Path) -> None:
    """os.open(path, O_RDONLY | O_TRUNC) empties a file: outside the work directory it
    is refused like any write, though the standard library may be read."""
    import os

    hook = _hook(tmp_path)
    with pytest.raises(PermissionError, match="blocked: open /usr/lib/python3/os.py"):
        hook("open", ("/usr/lib/python3/os.py", None, os.O_RDONLY | os.O_TRUNC))
    hook("open", ("/usr/lib/python3/os.py", None, os.O_RDONLY))
