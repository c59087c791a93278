"""How the sandbox child is wrapped: the namespace plan, its probe, rlimits.

The boundary is the kernel's, not the audit hook's. Each run gets, through ``unshare``:

- new network, pid, ipc, uts and mount namespaces (and, when not started as root, a new
  user namespace that maps the user to root inside it, the only way an ordinary user
  can create the others);
- a **new root**: a small tmpfs holding only read-only binds of the system's
  ``/usr`` (and the ``/lib*``, ``/bin`` links or dirs), the interpreter's prefix, the
  dynamic loader's cache and four device nodes (null, zero, random, urandom), plus a
  size-capped ``noexec`` tmpfs at ``/deepsearch-work``. ``pivot_root`` moves onto it and the old
  root is detached, so the user's home, ``/tmp``, ``/dev/shm``, ``/etc`` and ``/proc``
  (no ``/proc`` at all: no other process, no ``cwd`` link into another run) do not
  exist for the code, whatever native code it loads;
- no capabilities: ``setpriv`` empties the bounding and inheritable sets and sets
  ``no_new_privs``; as root it also switches to a **fresh uid per run** (from a range
  no account uses), so two runs share no identity and RLIMIT_NPROC counts this run alone;
- the seccomp filter of ``seccomp.py``, installed by the child itself before the code
  runs (no new programs, processes, sockets or namespaces).

The shell that builds the root stays pid 1 of the new pid namespace and runs the
interpreter as its child: when it dies, the kernel kills everything in the namespace.
``unshare --kill-child`` kills it when ``unshare`` dies, and ``unshare`` itself gets
``PR_SET_PDEATHSIG`` = SIGKILL from the parent, so a ``kill -9`` of deepsearch ends the
whole tree. Where any of this cannot be set up, the probe says why and the sandbox
refuses to run code (the agent then never offers *coding*).
"""

from __future__ import annotations

import ctypes
import os
import secrets
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

Isolation = Literal["auto", "unshare", "none-unsafe"]

_PROBE_TIMEOUT_S = 10.0
_NICENESS = 10
_SPARE_TASKS = 16  # threads the code may start (processes are denied by seccomp)
# Per-run uids as root: a range no distribution hands to accounts (below 2**31 - 1,
# which some tools treat as "no uid").
_UID_BASE, _UID_SPAN = 0x7E000000, 0x01000000
_WORK = "/deepsearch-work"  # the code's directory inside the new root
_DEVICES = ("null", "zero", "random", "urandom")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime")
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
ENABLE_HINT = (
    "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "
    "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu) and install util-linux"
)


class SandboxLimits(BaseModel):
    """Resource limits of one run."""

    cpu_s: int = Field(default=5, ge=1)
    """CPU seconds (RLIMIT_CPU); the wall-clock limit catches sleeping code."""
    wall_s: float = Field(default=10, gt=0)
    memory_mb: int = Field(default=512, ge=64)
    """Address space (RLIMIT_AS) of the interpreter."""
    file_size_mb: int = Field(default=16, ge=1)
    """Largest file the code may write; the work tmpfs holds at most twice this."""
    max_output_chars: int = Field(default=20_000, ge=100)
    """Cap for stdout, stderr and the rendered result, each."""
    max_open_files: int = Field(default=64, ge=16)


class IsolationPlan(BaseModel):
    """How the child is wrapped, decided once by a probe.

    ``prefix`` may hold the placeholders ``{root}`` (the new root's mount point) and
    ``{fstab}``; ``mounts`` may hold ``{root}``, ``{tmpfs_mb}`` and ``{uid}``: filled per
    run (``SandboxDirs.command``).
    """

    usable: bool
    reason: str
    prefix: list[str] = Field(default_factory=list)
    python: str = ""
    fresh_uid: bool = False
    """True when each run gets its own unprivileged uid (started as root)."""
    seccomp: bool = False
    """True when the child must install the seccomp filter before running code."""
    mounts: list[str] = Field(default_factory=list)
    """The new root's fstab (``_mount_table``), its placeholders filled per run into
    ``{fstab}``, a file of the run's own folder."""


_NAMESPACES = ["--net", "--pid", "--ipc", "--uts", "--mount", "--fork", "--kill-child"]


def _python() -> str:
    # The base interpreter, not a venv wrapper: -S ignores site-packages anyway.
    return os.path.realpath(sys.executable)


def _fstab_field(text: str) -> str:
    """A path as an fstab field: libmount reads these four characters as octal escapes."""
    for char in "\\ \t\n":
        text = text.replace(char, f"\\{ord(char):03o}")
    return text


def _bound_files() -> list[str]:
    """The files bound into the new root (a missing /etc file is left out: its bind
    would fail and end the run)."""
    return [*(f"/dev/{d}" for d in _DEVICES), *filter(os.path.isfile, _ETC_FILES)]


def _mount_table() -> list[str]:
    """The new root's mounts after its tmpfs, as fstab lines (``mount -a`` mounts them
    in order, in one process: a ``mount`` per bind and one more per read-only remount
    was ~30 programs started per run, most of a run's start-up CPU). Targets are under
    ``{root}``; ``bind,ro`` is one step (util-linux 2.27), ``X-mount.mkdir`` makes a
    directory target (2.30: where it is unknown, the target is missing, the mount
    fails, and the probe turns coding off)."""
    f = _fstab_field
    prefix = os.path.realpath(sys.base_prefix)
    binds = [d for d in _SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    if not any(prefix == d or prefix.startswith(d + "/") for d in binds):
        binds.append(prefix)
    lines = [f"{f(d)} {{root}}{f(d)} none bind,ro,nosuid,nodev,X-mount.mkdir 0 0" for d in binds]
    files = _bound_files()
    lines += [f"{f(path)} {{root}}{f(path)} none bind,ro,nosuid 0 0" for path in files]
    lines += [
        "sandbox-work {root}" + _WORK + " tmpfs size={tmpfs_mb}m,mode=0700,nosuid,nodev,"
        "noexec,uid={uid},gid={uid},X-mount.mkdir 0 0",
        # umount reads /proc/self/mountinfo: a proc of the new pid namespace, only
        # while the old root is detached, then gone too.
        "proc {root}/proc proc nosuid,nodev,noexec,X-mount.mkdir 0 0",
    ]
    return lines


def _root_script(mount: str, pivot_root: str, umount: str) -> str:
    """The sh program (pid 1 of the namespace) that builds the new root from the mount
    table in the file "$1" (``_mount_table``) and runs "$@"."""
    q = shlex.quote
    lines = [
        "set -e",
        "R=$0 F=$1; shift",
        f'{q(mount)} -t tmpfs -o size=8m,mode=0755,nosuid,nodev sandbox-root "$R"',
        'mkdir "$R/dev" "$R/etc" "$R/.old"',
    ]
    links = [(d, os.readlink(d)) for d in _SYSTEM_DIRS if os.path.islink(d)]
    # One `ln -t` for the usual links (/bin -> usr/bin: the link named as its target).
    same = [target for link, target in links if os.path.basename(target) == link[1:]]
    if same:
        lines.append(f'ln -s -t "$R" {" ".join(map(q, same))}')
    for link, target in links:
        if os.path.basename(target) != link[1:]:
            lines.append(f'ln -s {q(target)} "$R"{q(link)}')
    files = _bound_files()
    lines += [f': > "$R"{q(path)}' for path in files]  # the binds' targets
    lines += [
        f'{q(mount)} -a -T "$F"',
        'cd "$R"',
        f"{q(pivot_root)} . .old",
        "cd /",
        f"{q(umount)} -l /.old /proc",
        "rmdir /.old /proc",
        f"{q(mount)} -o remount,ro,nosuid,nodev /",
        f"cd {_WORK}",
        # Not exec: this shell stays pid 1 (the interpreter gets the rlimits' signals).
        '"$@"; exit $?',
    ]
    return "\n".join(lines)


def unshare_candidates() -> list[IsolationPlan]:
    """The wrapper to try (not yet probed, so marked usable); none without util-linux."""
    tools = {n: shutil.which(n) for n in ("unshare", "mount", "umount", "setpriv")}
    tools["pivot_root"] = shutil.which("pivot_root") or shutil.which(
        "pivot_root", path="/usr/sbin:/sbin"
    )
    if any(path is None for path in tools.values()):
        return []
    unshare, mount, umount, setpriv, pivot = (
        str(tools[n]) for n in ("unshare", "mount", "umount", "setpriv", "pivot_root")
    )
    script = _root_script(mount, pivot, umount)
    drop = ["--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"]
    if os.geteuid() == 0:
        user: list[str] = []
        drop = ["--reuid={uid}", "--regid={uid}", "--clear-groups", *drop]
        reason = "a new root, no capabilities, a fresh uid per run"
    else:
        user = ["--map-root-user"]
        reason = "a user namespace, a new root, no capabilities"
    prefix = [unshare, *user, *_NAMESPACES, "/bin/sh", "-c", script]
    prefix += ["{root}", "{fstab}", setpriv, *drop, "--"]
    return [
        IsolationPlan(
            usable=True,
            reason=reason,
            prefix=prefix,
            fresh_uid=os.geteuid() == 0,
            seccomp=True,
            mounts=_mount_table(),
        )
    ]


class SandboxDirs:
    """``base/`` holding ``root/``, the (host-side, always empty) mount point of a run's
    new root; the code's files live on a tmpfs inside the namespace and vanish with it.
    Plans without a new root (``none-unsafe``) use ``work/`` beside it."""

    def __enter__(self) -> SandboxDirs:
        self.base = tempfile.mkdtemp(prefix="deepsearch-sandbox-")
        self.root = os.path.join(self.base, "root")
        self.work = os.path.join(self.base, "work")
        os.mkdir(self.root, 0o700)
        os.mkdir(self.work, 0o700)
        self.uid = _UID_BASE + secrets.randbelow(_UID_SPAN)
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def workdir(self, plan: IsolationPlan) -> str:
        """The code's working directory as the code sees it."""
        return _WORK if plan.prefix else self.work

    def command(self, plan: IsolationPlan, tmpfs_mb: int) -> list[str]:
        """The wrapper and interpreter, placeholders filled (and the run's mount table
        written where ``{fstab}`` says)."""
        uid = str(self.uid if plan.fresh_uid else 0)
        fstab = os.path.join(self.base, "fstab")
        values = {"{tmpfs_mb}": str(tmpfs_mb), "{uid}": uid, "{fstab}": fstab}

        def fill(arg: str, root: str) -> str:
            for key, value in {"{root}": root, **values}.items():
                arg = arg.replace(key, value)
            return arg

        if plan.mounts:
            table = "".join(fill(line, _fstab_field(self.root)) + "\n" for line in plan.mounts)
            with open(fstab, "xb") as file:  # the paths' own bytes, as they were decoded
                file.write(os.fsencode(table))
        return [fill(arg, self.root) for arg in plan.prefix] + [plan.python or _python()]


def child_env(workdir: str) -> dict[str, str]:
    # Nothing from the parent: API keys and proxies live in the environment.
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": workdir, "HOME": workdir}


def _rlimits(limits: SandboxLimits, plan: IsolationPlan) -> list[tuple[str, int, int]]:
    """(prlimit's name, soft, hard) for one run."""
    mb = 1024 * 1024
    settings = [
        ("cpu", limits.cpu_s, limits.cpu_s + 1),
        ("as", limits.memory_mb * mb, limits.memory_mb * mb),
        ("fsize", limits.file_size_mb * mb, limits.file_size_mb * mb),
        ("nofile", limits.max_open_files, limits.max_open_files),
        ("core", 0, 0),
    ]
    # Root ignores RLIMIT_NPROC; a fresh uid runs no task yet. An ordinary user's count
    # is every task of theirs: concurrent runs would share one allowance, and one run's
    # threads would stop the next run from starting (seen: "unshare: fork failed"). With
    # the seccomp filter no process can be made and threads are bounded by the address
    # space, so only a run without the filter (tests' none-unsafe) takes the limit.
    if plan.fresh_uid:
        settings.append(("nproc", _SPARE_TASKS, _SPARE_TASKS))
    elif os.geteuid() != 0 and not plan.seccomp:
        tasks = _tasks_of(os.geteuid()) + _SPARE_TASKS
        settings.append(("nproc", tasks, tasks))
    return settings


def launcher(limits: SandboxLimits, plan: IsolationPlan) -> list[str] | None:
    """The programs that start a wrapped run without a ``preexec_fn`` (None: use
    ``limit_setter``): ``setpriv --pdeathsig`` (the whole tree dies with the parent) and
    ``nice`` and ``prlimit`` (the rlimits, inherited by everything below). Without a preexec_fn the
    parent spawns with vfork, ~0.5 ms instead of a fork's ~25 ms of a stalled event loop
    under load."""
    setpriv, prlimit, nice = (shutil.which(n) for n in ("setpriv", "prlimit", "nice"))
    if not plan.prefix or setpriv is None or prlimit is None or nice is None:
        return None
    limits_args = [f"--{name}={soft}:{hard}" for name, soft, hard in _rlimits(limits, plan)]
    # nice: a busy sandbox yields the CPU to the parent (its event loop, the user's
    # other work) instead of competing with it on equal terms.
    niceness = [nice, "-n", str(_NICENESS)]
    return [setpriv, "--pdeathsig=KILL", "--", *niceness, prlimit, *limits_args, "--"]


_PR_SET_PDEATHSIG = 1
_SIGKILL = 9


def _libc_prctl() -> Callable[..., int] | None:
    """prctl, looked up in the parent (not in the forked child, where loading is unsafe)."""
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL = _libc_prctl() if sys.platform == "linux" else None


def limit_setter(limits: SandboxLimits, plan: IsolationPlan) -> Callable[[], None]:
    """preexec_fn: runs in the forked child before exec: rlimits, and death with the parent."""
    import resource

    names = {
        "cpu": resource.RLIMIT_CPU,
        "as": resource.RLIMIT_AS,
        "fsize": resource.RLIMIT_FSIZE,
        "nofile": resource.RLIMIT_NOFILE,
        "core": resource.RLIMIT_CORE,
        "nproc": resource.RLIMIT_NPROC,
    }
    settings = [(names[name], soft, hard) for name, soft, hard in _rlimits(limits, plan)]
    parent, prctl = os.getpid(), _PRCTL

    def apply() -> None:
        os.nice(_NICENESS)
        for which, soft, hard in settings:
            resource.setrlimit(which, (soft, hard))
        if prctl is not None and plan.prefix:
            prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # the parent died before the line above
                os._exit(1)

    return apply


def _tasks_of(uid: int) -> int:
    """Tasks (threads included, as RLIMIT_NPROC counts them) that ``uid`` runs now."""
    count = 0
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue  # the process ended meanwhile
    return count
