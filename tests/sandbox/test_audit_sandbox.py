"""Outside mutation audit (issue 37): sandbox behaviours no other test pinned. The
kernel's layers are read from inside ONE sandboxed run without the audit hook (what the
code would find if it got past the hook); the hook and the child's reporting are
checked in-process, on their own functions (nothing is installed in this process)."""

from __future__ import annotations

import ast
import asyncio

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
