"""The wrapper's rules: the new root the code lands in, its identity and its limits, read
from inside ONE real run (the hook off, so the code may look at its own rlimits; the
kernel's layers are all there), and the pure parts (limit values, the launcher's and
the wrapper's arguments, the directories) checked without a run."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import deepsearch.sandbox.isolation as isolation
from deepsearch.sandbox.isolation import (
    IsolationPlan,
    SandboxDirs,
    SandboxLimits,
    child_env,
    launcher,
    limit_setter,
    unshare_candidates,
)
from deepsearch.sandbox.runner import Sandbox

LIMITS = SandboxLimits(cpu_s=2, wall_s=5, memory_mb=300, file_size_mb=3, max_open_files=40)
MB = 1024 * 1024
UNSAFE = IsolationPlan(usable=True, reason="none")

INSIDE = """
import json, os, resource
flags = lambda path: {n: bool(os.statvfs(path).f_flag & getattr(os, 'ST_' + n.upper()))
                      for n in ('rdonly', 'nosuid', 'nodev', 'noexec')}
work = os.statvfs('.')
stat = os.stat('.')
limits = {n: resource.getrlimit(getattr(resource, 'RLIMIT_' + n.upper()))
          for n in ('cpu', 'as', 'fsize', 'nofile', 'core', 'nproc')}
result = json.dumps({
    'cwd': os.getcwd(), 'uid': os.getuid(), 'gid': os.getgid(), 'groups': os.getgroups(),
    'top': sorted(os.listdir('/')), 'root': flags('/'), 'usr': flags('/usr'),
    'work': flags('.'), 'work_mb': work.f_blocks * work.f_frsize // 2**20,
    'work_mode': oct(stat.st_mode & 0o777), 'work_owner': stat.st_uid,
    'null': flags('/dev/null'), 'limits': limits, 'nice': os.nice(0),
    'pid': os.getpid(), 'ppid': os.getppid(),
})
"""


@pytest.fixture(scope="module")
def inside() -> dict[str, Any]:
    """What the code sees of its world, from one wrapped run."""
    plans = unshare_candidates()
    assert plans, "util-linux is expected where the tests run"
    plan = plans[0].model_copy(update={"reason": "test"})
    out = asyncio.run(Sandbox(LIMITS, probe=lambda: plan, audit_hook=False).run(INSIDE, {}))
    assert out.ok and out.result is not None, (out.error, out.stderr)
    seen: dict[str, Any] = json.loads(out.result)
    return seen


def test_the_code_lands_in_a_new_root_holding_only_the_system_s_read_only_files(
    inside: dict[str, Any],
) -> None:
    assert inside["cwd"] == "/deepsearch-work"
    # No /proc, no /.old (the host's root, detached), no /home, /tmp or /root.
    assert set(inside["top"]) <= {"deepsearch-work", "dev", "etc", "usr", "bin", "sbin",
                                  "lib", "lib64", "lib32", "libx32", "root"} | {
        Path(sys.base_prefix).resolve().parts[1]
    }  # fmt: skip
    assert {"proc", ".old", "tmp", "home"}.isdisjoint(inside["top"])
    assert {"deepsearch-work", "dev", "etc", "usr"} <= set(inside["top"])
    assert inside["root"] == {"rdonly": True, "nosuid": True, "nodev": True, "noexec": False}
    assert inside["usr"] == {"rdonly": True, "nosuid": True, "nodev": True, "noexec": False}
    assert inside["null"]["rdonly"] and inside["null"]["nosuid"]


def test_the_work_directory_is_a_private_capped_tmpfs_that_runs_nothing(
    inside: dict[str, Any],
) -> None:
    assert inside["work"] == {"rdonly": False, "nosuid": True, "nodev": True, "noexec": True}
    assert inside["work_mb"] == 2 * 3  # twice the largest file
    assert inside["work_mode"] == "0o700" and inside["work_owner"] == inside["uid"]


def test_the_code_runs_as_a_fresh_uid_with_no_groups_under_the_namespace_s_init(
    inside: dict[str, Any],
) -> None:
    if os.geteuid() != 0:
        pytest.skip("a fresh uid per run is for root")
    assert 0x7E000000 <= inside["uid"] < 0x7F000000
    assert inside["gid"] == inside["uid"] and inside["groups"] == []
    assert inside["ppid"] == 1  # the shell that built the root is the namespace's init


def test_the_child_s_limits(inside: dict[str, Any]) -> None:
    limits = inside["limits"]
    assert limits["cpu"] == [2, 3]  # the hard limit a second later: SIGKILL
    assert limits["as"] == [300 * MB, 300 * MB]
    assert limits["fsize"] == [3 * MB, 3 * MB]
    assert limits["nofile"] == [40, 40]  # the open-files limit
    assert limits["core"] == [0, 0]
    if os.geteuid() == 0:
        assert limits["nproc"] == [16, 16]
    assert inside["nice"] == min(os.nice(0) + 10, 19)


# --- the pure parts ---------------------------------------------------------------------


def test_the_limit_values_of_a_run() -> None:
    fresh = IsolationPlan(usable=True, reason="", prefix=["u"], fresh_uid=True, seccomp=True)
    assert isolation._rlimits(SandboxLimits(), fresh) == [
        ("cpu", 5, 6),
        ("as", 512 * MB, 512 * MB),
        ("fsize", 16 * MB, 16 * MB),
        ("nofile", 64, 64),
        ("core", 0, 0),
        ("nproc", 16, 16),
    ]


def test_root_without_a_fresh_uid_takes_no_task_limit() -> None:
    with mock.patch("os.geteuid", return_value=0):
        names = [row[0] for row in isolation._rlimits(LIMITS, UNSAFE)]
    assert names == ["cpu", "as", "fsize", "nofile", "core"]
    filtered = UNSAFE.model_copy(update={"prefix": ["u"], "seccomp": True})
    with mock.patch("os.geteuid", return_value=1000):  # processes are the filter's to deny
        assert [row[0] for row in isolation._rlimits(LIMITS, filtered)] == names


def test_an_unfiltered_ordinary_user_s_task_limit_counts_the_tasks_they_run() -> None:
    with (
        mock.patch("os.geteuid", return_value=4321),
        mock.patch.object(isolation, "_tasks_of", return_value=7) as tasks,
    ):
        assert isolation._rlimits(LIMITS, UNSAFE)[-1] == ("nproc", 7 + 16, 7 + 16)
    tasks.assert_called_once_with(4321)


def test_the_tasks_of_a_user_are_counted_thread_by_thread() -> None:
    mine = len(os.listdir("/proc/self/task"))
    assert isolation._tasks_of(os.geteuid()) >= mine >= 1
    assert isolation._tasks_of(0x7EFFFFFF) == 0  # no process runs as a fresh uid's neighbour


def test_every_process_of_the_user_counts_even_after_one_ended_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owners = {"1": 0, "22": 1000, "33": 1000, "44": 1000}
    tasks = {"1": ["1"], "22": ["22", "23"], "44": ["44"]}  # 33 ends as it is read

    def listdir(path: str) -> list[str]:
        if path == "/proc":
            return ["1", "22", "self", "33", "44"]
        pid = path.split("/")[2]
        if pid not in tasks:
            raise FileNotFoundError(path)
        return tasks[pid]

    def stat(path: str) -> os.stat_result:
        return os.stat_result((0, 0, 0, 0, owners[path.split("/")[2]], 0, 0, 0, 0, 0))

    monkeypatch.setattr(os, "listdir", listdir)
    monkeypatch.setattr(os, "stat", stat)
    assert isolation._tasks_of(1000) == 3


def test_the_launcher_sets_the_limits_the_priority_and_death_with_the_parent() -> None:
    plan = IsolationPlan(usable=True, reason="", prefix=["u"], fresh_uid=True)
    with mock.patch("shutil.which", side_effect=lambda name: f"/bin/{name}"):
        argv = launcher(LIMITS, plan)
    assert argv == [
        "/bin/setpriv", "--pdeathsig=KILL", "--", "/bin/nice", "-n", "10", "/bin/prlimit",
        "--cpu=2:3", f"--as={300 * MB}:{300 * MB}", f"--fsize={3 * MB}:{3 * MB}",
        "--nofile=40:40", "--core=0:0", "--nproc=16:16", "--",
    ]  # fmt: skip


@pytest.mark.parametrize("missing", ["setpriv", "prlimit", "nice"])
def test_no_launcher_without_its_tools_or_without_a_wrapper(missing: str) -> None:
    plan = IsolationPlan(usable=True, reason="", prefix=["u"])
    with mock.patch("shutil.which", side_effect=lambda n: None if n == missing else f"/b/{n}"):
        assert launcher(LIMITS, plan) is None
    with mock.patch("shutil.which", side_effect=lambda n: f"/b/{n}"):
        assert launcher(LIMITS, UNSAFE) is None


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> int:
        self.calls.append(args)
        return 0


def test_the_preexec_function_sets_each_limit_and_death_with_the_parent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    setrlimit, nice, prctl, exits = Recorder(), Recorder(), Recorder(), Recorder()
    monkeypatch.setattr(resource, "setrlimit", lambda which, pair: setrlimit(which, pair))
    monkeypatch.setattr(os, "nice", nice)
    monkeypatch.setattr(os, "_exit", exits)
    monkeypatch.setattr(isolation, "_PRCTL", prctl)
    plan = IsolationPlan(usable=True, reason="", prefix=["u"], fresh_uid=True)
    apply = limit_setter(LIMITS, plan)  # as in the forked child: its parent is this process
    parent = os.getpid()
    monkeypatch.setattr(os, "getppid", lambda: parent)
    apply()
    assert nice.calls == [(10,)]
    assert setrlimit.calls == [
        (resource.RLIMIT_CPU, (2, 3)),
        (resource.RLIMIT_AS, (300 * MB, 300 * MB)),
        (resource.RLIMIT_FSIZE, (3 * MB, 3 * MB)),
        (resource.RLIMIT_NOFILE, (40, 40)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NPROC, (16, 16)),
    ]
    assert prctl.calls == [(1, 9, 0, 0, 0)]  # PR_SET_PDEATHSIG, SIGKILL
    assert exits.calls == []
    # The parent died before the death signal was set: the child ends at once.
    monkeypatch.setattr(os, "getppid", lambda: 1)
    apply()
    assert exits.calls == [(1,)]


def test_an_unwrapped_run_is_not_tied_to_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    prctl = Recorder()
    monkeypatch.setattr(resource, "setrlimit", lambda which, pair: None)
    monkeypatch.setattr(os, "nice", lambda n: 0)
    monkeypatch.setattr(isolation, "_PRCTL", prctl)
    limit_setter(LIMITS, UNSAFE)()
    assert prctl.calls == []


def test_prctl_is_found_in_the_c_library() -> None:
    prctl = isolation._libc_prctl()
    assert prctl is not None
    assert prctl(39, 0, 0, 0, 0) in (0, 1)  # PR_GET_NO_NEW_PRIVS
    with mock.patch("ctypes.CDLL", side_effect=OSError("no libc")):
        assert isolation._libc_prctl() is None


def test_the_child_s_environment_holds_nothing_of_the_parent_s() -> None:
    assert child_env("/w") == {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": "/w",
                               "HOME": "/w"}  # fmt: skip


def test_a_run_s_directories_are_private_and_removed_afterwards() -> None:
    with SandboxDirs() as dirs:
        base = Path(dirs.base)
        assert base.name.startswith("deepsearch-sandbox-")
        assert Path(dirs.root) == base / "root" and Path(dirs.work) == base / "work"
        for path in (dirs.root, dirs.work):
            assert Path(path).is_dir() and Path(path).stat().st_mode & 0o777 == 0o700
        (base / "work" / "left").write_text("x")
        assert 0x7E000000 <= dirs.uid < 0x7F000000
        assert dirs.workdir(UNSAFE) == dirs.work
        assert dirs.workdir(IsolationPlan(usable=True, reason="", prefix=["u"])) == (
            "/deepsearch-work"
        )
    assert not base.exists()
    with SandboxDirs() as gone:  # a folder cleaned away under the run: no error
        shutil.rmtree(gone.base)


def test_the_wrapper_s_placeholders_are_filled_per_run() -> None:
    plan = IsolationPlan(
        usable=True, reason="", prefix=["u", "{root}", "{tmpfs_mb}", "--reuid={uid}"],
        python="/py", fresh_uid=True,
    )  # fmt: skip
    with SandboxDirs() as dirs, SandboxDirs() as other:
        argv = dirs.command(plan, 32)
        assert argv == ["u", dirs.root, "32", f"--reuid={dirs.uid}", "/py"]
        assert dirs.uid != other.uid or dirs.root != other.root
        shared = plan.model_copy(update={"fresh_uid": False, "python": ""})
        assert dirs.command(shared, 1) == ["u", dirs.root, "1", "--reuid=0",
                                           os.path.realpath(sys.executable)]  # fmt: skip
        assert not (Path(dirs.base) / "fstab").exists()  # a plan without a mount table


def test_the_run_s_mount_table_is_written_filled_with_its_root_escaped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "a bX"))  # X: no escape
    (tmp_path / "a bX").mkdir()
    plan = IsolationPlan(
        usable=True, reason="", prefix=["u", "{root}", "{fstab}"], python="/py", fresh_uid=True,
        mounts=["/usr {root}/usr none bind 0 0", "w {root}/w tmpfs size={tmpfs_mb}m,uid={uid} 0 0"],
    )  # fmt: skip
    with SandboxDirs() as dirs:
        argv = dirs.command(plan, 32)
        fstab = Path(dirs.base) / "fstab"
        assert argv == ["u", dirs.root, str(fstab), "/py"]
        root = dirs.root.replace(" ", "\\040")
        assert fstab.read_bytes().decode() == (
            f"/usr {root}/usr none bind 0 0\nw {root}/w tmpfs size=32m,uid={dirs.uid} 0 0\n"
        )


def test_a_root_path_that_is_not_utf_8_is_written_as_its_own_bytes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    odd = tmp_path / os.fsdecode(b"caf\xe9")  # a Latin-1 name: undecodable as UTF-8
    odd.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(odd))
    plan = IsolationPlan(usable=True, reason="", prefix=["{fstab}"], mounts=["x {root} none 0 0"])
    with SandboxDirs() as dirs:
        (fstab,) = dirs.command(plan, 1)[:1]
        assert Path(fstab).read_bytes() == b"x " + os.fsencode(dirs.root) + b" none 0 0\n"
        assert b"caf\xe9/" in Path(fstab).read_bytes()


# --- the wrapper ----------------------------------------------------------------------------

TOOLS = {n: f"/t/{n}" for n in ("unshare", "mount", "umount", "setpriv", "pivot_root")}


def candidates(euid: int, tools: dict[str, str | None] = TOOLS) -> list[IsolationPlan]:
    def which(name: str, path: str | None = None) -> str | None:
        return tools.get(name)

    with mock.patch("shutil.which", side_effect=which), mock.patch("os.geteuid", return_value=euid):
        return unshare_candidates()


def test_as_root_each_run_gets_a_fresh_uid_and_no_capabilities() -> None:
    (plan,) = candidates(0)
    assert plan.usable and plan.fresh_uid and plan.seccomp
    assert plan.reason == "a new root, no capabilities, a fresh uid per run"
    script = isolation._root_script("/t/mount", "/t/pivot_root", "/t/umount")
    assert plan.prefix == [
        "/t/unshare", "--net", "--pid", "--ipc", "--uts", "--mount", "--fork", "--kill-child",
        "/bin/sh", "-c", script, "{root}", "{fstab}", "/t/setpriv",
        "--reuid={uid}", "--regid={uid}", "--clear-groups", "--bounding-set=-all",
        "--inh-caps=-all", "--no-new-privs", "--",
    ]  # fmt: skip
    assert plan.mounts == isolation._mount_table()


def test_an_ordinary_user_maps_to_root_in_a_user_namespace() -> None:
    (plan,) = candidates(1000)
    assert not plan.fresh_uid and plan.seccomp
    assert plan.reason == "a user namespace, a new root, no capabilities"
    assert plan.prefix[:3] == ["/t/unshare", "--map-root-user", "--net"]
    assert plan.prefix[-5:] == ["/t/setpriv", "--bounding-set=-all", "--inh-caps=-all",
                                "--no-new-privs", "--"]  # fmt: skip


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_no_wrapper_without_every_tool(tool: str) -> None:
    assert candidates(0, {**TOOLS, tool: None}) == []


def test_pivot_root_is_found_in_sbin_off_the_path() -> None:
    calls: list[tuple[str, str | None]] = []

    def which(name: str, path: str | None = None) -> str | None:
        calls.append((name, path))
        if name == "pivot_root":
            return "/sbin/pivot_root" if path == "/usr/sbin:/sbin" else None
        return f"/t/{name}"

    with mock.patch("shutil.which", side_effect=which):
        (plan,) = unshare_candidates()
    assert "/sbin/pivot_root . .old" in plan.prefix[plan.prefix.index("-c") + 1]


def test_the_root_script_fails_closed_and_leaves_no_way_back() -> None:
    lines = isolation._root_script("/m", "/p", "/u").splitlines()
    assert lines[0] == "set -e"  # any failed step ends the run before the code
    assert lines[1] == "R=$0 F=$1; shift"
    assert lines[2] == '/m -t tmpfs -o size=8m,mode=0755,nosuid,nodev sandbox-root "$R"'
    assert lines[-9:] == [
        '/m -a -T "$F"',  # every bind, the work tmpfs and proc, in the table's order
        'cd "$R"',
        "/p . .old",
        "cd /",
        "/u -l /.old /proc",
        "rmdir /.old /proc",
        "/m -o remount,ro,nosuid,nodev /",
        "cd /deepsearch-work",
        '"$@"; exit $?',
    ]
    table = isolation._mount_table()
    assert table[-2:] == [
        "sandbox-work {root}/deepsearch-work tmpfs size={tmpfs_mb}m,mode=0700,nosuid,nodev,"
        "noexec,uid={uid},gid={uid},X-mount.mkdir 0 0",
        "proc {root}/proc proc nosuid,nodev,noexec,X-mount.mkdir 0 0",
    ]


def test_the_root_holds_read_only_binds_of_the_system_and_four_devices() -> None:
    script, table = isolation._root_script("/m", "/p", "/u"), isolation._mount_table()
    for device in ("null", "zero", "random", "urandom"):
        path = f"/dev/{device}"
        assert f': > "$R"{path}\n' in script  # the bind's target, made before `mount -a`
        assert f"{path} {{root}}{path} none bind,ro,nosuid 0 0" in table
    assert not any("/dev/tty" in x or "/dev/shm" in x for x in [script, *table])
    for name in ("/etc/ld.so.cache", "/etc/localtime"):
        assert (f"{name} {{root}}{name} none bind,ro,nosuid 0 0" in table) == os.path.isfile(name)


def test_a_missing_system_file_is_left_out_of_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.path.isfile
    monkeypatch.setattr(os.path, "isfile", lambda p: p != "/etc/localtime" and real(p))
    script, table = isolation._root_script("/m", "/p", "/u"), isolation._mount_table()
    # its bind would fail and `set -e` end the run
    assert "/etc/localtime" not in script and not any("/etc/localtime" in x for x in table)
    assert 'mkdir "$R/dev" "$R/etc" "$R/.old"' in script
    for path in ("/usr", "/bin", "/sbin", "/lib", "/lib64"):
        if os.path.islink(path):
            target = os.readlink(path)
            if os.path.basename(target) == path[1:]:
                (line,) = [x for x in script.splitlines() if x.startswith('ln -s -t "$R" ')]
                assert shlex.quote(target) in line.split()[4:]
            else:
                assert f'ln -s {shlex.quote(target)} "$R"{path}\n' in script
        elif os.path.isdir(path):
            assert f"{path} {{root}}{path} none bind,ro,nosuid,nodev,X-mount.mkdir 0 0" in table
    prefix = os.path.realpath(sys.base_prefix)
    bound = f"{prefix} {{root}}{prefix} none bind,ro,nosuid,nodev,X-mount.mkdir 0 0"
    assert bound in table or prefix.startswith("/usr/")


def test_a_link_named_otherwise_than_its_target_gets_its_own_ln(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    links = {"/bin": "usr/bin", "/lib64": "usr/lib/x86_64"}
    monkeypatch.setattr(os.path, "islink", lambda p: p in links)
    monkeypatch.setattr(os, "readlink", lambda p: links[p])
    lines = isolation._root_script("/m", "/p", "/u").splitlines()
    assert 'ln -s -t "$R" usr/bin' in lines
    assert 'ln -s usr/lib/x86_64 "$R"/lib64' in lines


def test_an_interpreter_under_a_system_directory_is_not_bound_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def bound(path: str) -> int:
        return sum(x.startswith(f"{path} {{root}}{path} ") for x in isolation._mount_table())

    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert bound("/usr") == int(os.path.isdir("/usr") and not os.path.islink("/usr"))
    monkeypatch.setattr(sys, "base_prefix", "/usr/local/py")
    assert not any("/usr/local/py" in x for x in isolation._mount_table())
    monkeypatch.setattr(sys, "base_prefix", "/usrx/py")
    assert bound("/usrx/py") == 1


def test_the_interpreter_is_the_base_one_not_a_virtual_environment_s_link() -> None:
    assert isolation._python() == os.path.realpath(sys.executable)
