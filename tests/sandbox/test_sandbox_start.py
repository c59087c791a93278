"""How a run's new root is built: one mount table, whatever the temporary folder's name."""

from __future__ import annotations

import ast
import asyncio
import tempfile
from pathlib import Path

import pytest

from deepsearch.sandbox.isolation import SandboxLimits, _fstab_field
from deepsearch.sandbox.runner import Sandbox

pytestmark = pytest.mark.xdist_group("sandbox")


def test_a_temporary_folder_with_spaces_and_backslashes_still_gets_a_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's root is named in the mount table, where a space or a tab would split a
    field: a TMPDIR like "My Files" must not turn coding off."""
    odd = tmp_path / "My Files\\tab\there"
    odd.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(odd))
    box = Sandbox(SandboxLimits(cpu_s=1, wall_s=5, memory_mb=256))
    usable, reason = box.availability()
    assert usable, reason
    out = asyncio.run(box.run("import os\nresult = os.getcwd()", {}))
    assert (out.error, out.result) == (None, "/deepsearch-work")
    assert list(odd.iterdir()) == []  # the run's folder (and its mount table) removed


def test_fstab_fields_escape_what_would_split_or_end_a_field() -> None:
    assert _fstab_field("/a b\tc\nd\\e") == "/a\\040b\\011c\\012d\\134e"
    assert _fstab_field("/usr") == "/usr"


def test_the_new_root_is_read_only_but_the_work_folder_and_devices() -> None:
    """What the mount table promises (docs/security.md), as the code sees it: its `/`,
    the system's binds and the interpreter's prefix are read-only and no set-uid file
    works there; the work folder is writable but nothing in it can be executed. Writes
    to them also fail for want of permission (a fresh uid): as an ordinary user whose
    interpreter lives in their home, the read-only mount is what protects it."""
    code = (
        "import os, sys\n"
        "flags = {p: os.statvfs(p).f_flag for p in "
        "('/', '/usr', sys.base_prefix, '/etc/ld.so.cache', '/dev/null', os.getcwd())}\n"
        "result = {p: [bool(f & os.ST_RDONLY), bool(f & os.ST_NOSUID), bool(f & os.ST_NOEXEC)]"
        " for p, f in flags.items()}"
    )
    box = Sandbox(SandboxLimits(cpu_s=1, wall_s=5, memory_mb=256))
    out = asyncio.run(box.run(code, {}))
    assert out.error is None, out.error
    seen = ast.literal_eval(out.result or "")
    work = seen.pop("/deepsearch-work")
    assert work == [False, True, True]  # writable, no set-uid, noexec
    assert all(ro and nosuid for ro, nosuid, _ in seen.values()), seen
