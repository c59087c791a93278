"""How the sandbox child is wrapped: namespace plans, their probe run, rlimits.

Layers 1-2 and the rlimits of layer 4 of ``sandbox.py``'s list live here: the
``unshare`` wrappers (with or without dropping root to ``nobody``), the per-run
directories they mount over, the check that a plan really starts an interpreter,
and the rlimits set before exec, from the run's limits (`SandboxLimits`, here so that
the runner imports this module and never the other way round).
``deepsearch.sandbox.runner`` re-exports every name callers used from there.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

Isolation = Literal["auto", "unshare", "none-unsafe"]

_PROBE_TIMEOUT_S = 10.0
_SPARE_TASKS = 16  # processes the code could start if the audit hook were bypassed


class SandboxLimits(BaseModel):
    """Resource limits of one run."""

    cpu_s: int = Field(default=5, ge=1)
    """CPU seconds (RLIMIT_CPU); the wall-clock limit catches sleeping code."""
    wall_s: float = Field(default=10, gt=0)
    memory_mb: int = Field(default=512, ge=64)
    """Address space (RLIMIT_AS) of the interpreter."""
    file_size_mb: int = Field(default=16, ge=1)
    """Largest file the code may write; the tmpfs holds at most twice this."""
    max_output_chars: int = Field(default=20_000, ge=100)
    """Cap for stdout, stderr and the rendered result, each."""
    max_open_files: int = Field(default=64, ge=16)


class IsolationPlan(BaseModel):
    """How the child is wrapped, decided once by a probe.

    ``prefix`` and ``python`` may hold the placeholders ``{work}`` (the working directory),
    ``{pyroot}`` (where the interpreter is bind-mounted) and ``{tmpfs_mb}``, filled per run.
    """

    usable: bool
    reason: str
    prefix: list[str] = Field(default_factory=list)
    python: str = ""
    run_as_uid: int | None = None
    """The unprivileged uid the interpreter runs as, when the wrapper drops root."""


_NAMESPACES = ["--net", "--pid", "--ipc", "--uts", "--mount", "--fork", "--kill-child"]
_TMPFS = "size=${M}m,mode=0700,nodev,nosuid,noexec"
# sh stays pid 1 of the namespace and runs python as pid 2: the kernel's rlimit signals
# then have their normal effect (pid 1 ignores signals it has no handler for). The tmpfs
# hides nothing but gives the code a size-capped, noexec, nodev scratch space.
_SCRIPT = 'W=$0 M=$1; shift 1; {mount} -t tmpfs -o "{tmpfs}" sandbox "$W" && cd "$W" && "$@"'
# As root, also bind the interpreter's prefix read-only where an unprivileged uid can
# reach it (pyenv keeps it under /root), then drop to that uid with no capabilities.
_SCRIPT_DROP = (
    'W=$0 M=$1 P=$2 S=$3; shift 3; {mount} -t tmpfs -o "{tmpfs},uid={uid},gid={uid}" sandbox "$W"'
    ' && {mount} --bind "$S" "$P" && {mount} -o remount,bind,ro,nosuid,nodev "$P"'
    ' && cd "$W" && "$@"'
)


def _python() -> str:
    # The base interpreter, not a venv wrapper: -S ignores site-packages anyway.
    return os.path.realpath(sys.executable)


def _nobody() -> int:
    import pwd

    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return 65534


def unshare_candidates() -> list[IsolationPlan]:
    """Wrappers to try, strongest first (not yet probed, so all marked usable)."""
    unshare, mount, setpriv = (shutil.which(n) for n in ("unshare", "mount", "setpriv"))
    if unshare is None or mount is None:
        return []
    plain = _SCRIPT.format(mount=mount, tmpfs=_TMPFS)
    sh = ["/bin/sh", "-c"]
    if os.geteuid() != 0:
        prefix = [unshare, "--map-root-user", *_NAMESPACES, *sh, plain, "{work}", "{tmpfs_mb}"]
        return [IsolationPlan(usable=True, reason="unshare with a user namespace", prefix=prefix)]
    candidates = []
    exe, base = _python(), os.path.realpath(sys.base_prefix)
    if setpriv is not None and exe.startswith(base + "/"):
        uid = _nobody()
        drop = _SCRIPT_DROP.format(mount=mount, tmpfs=_TMPFS, uid=uid)
        privs = [f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--bounding-set=-all"]
        privs += ["--inh-caps=-all", "--no-new-privs", "--"]
        args = ["{work}", "{tmpfs_mb}", "{pyroot}", base, setpriv, *privs]
        candidates.append(
            IsolationPlan(
                usable=True,
                reason=f"unshare as uid {uid} without capabilities",
                prefix=[unshare, *_NAMESPACES, *sh, drop, *args],
                python="{pyroot}" + exe[len(base) :],
                run_as_uid=uid,
            )
        )
    prefix = [unshare, *_NAMESPACES, *sh, plain, "{work}", "{tmpfs_mb}"]
    candidates.append(IsolationPlan(usable=True, reason="unshare as root", prefix=prefix))
    return candidates


def check_plan(plan: IsolationPlan) -> str | None:
    """None when the plan starts an interpreter, else why not."""
    import subprocess  # synchronous: the probe runs once per Sandbox

    with SandboxDirs() as dirs:
        argv = dirs.command(plan, 1) + ["-I", "-S", "-B", "-c", "pass"]
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, env=child_env(dirs.work)
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"exit {done.returncode}: {lines[-1] if lines else 'no output'}"


class SandboxDirs:
    """``base/`` (0755, so a dropped uid can traverse it) holding ``work/`` and ``python/``."""

    def __enter__(self) -> SandboxDirs:
        self.base = tempfile.mkdtemp(prefix="deepsearch-sandbox-")
        os.chmod(self.base, 0o755)
        self.work = os.path.join(self.base, "work")
        self.pyroot = os.path.join(self.base, "python")
        os.mkdir(self.work, 0o700)
        os.mkdir(self.pyroot, 0o755)
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def command(self, plan: IsolationPlan, tmpfs_mb: int) -> list[str]:
        """The wrapper and interpreter, placeholders filled."""
        values = {"{work}": self.work, "{pyroot}": self.pyroot, "{tmpfs_mb}": str(tmpfs_mb)}

        def fill(arg: str) -> str:
            for key, value in values.items():
                arg = arg.replace(key, value)
            return arg

        return [fill(arg) for arg in plan.prefix] + [fill(plan.python or _python())]


def child_env(workdir: str) -> dict[str, str]:
    # Nothing from the parent: API keys and proxies live in the environment.
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": workdir, "HOME": workdir}


def limit_setter(limits: SandboxLimits, plan: IsolationPlan) -> Callable[[], None]:
    """preexec_fn: runs in the forked child before exec, so it only sets rlimits."""
    import resource

    mb = 1024 * 1024
    settings = [
        (resource.RLIMIT_CPU, limits.cpu_s, limits.cpu_s + 1),
        (resource.RLIMIT_AS, limits.memory_mb * mb, limits.memory_mb * mb),
        (resource.RLIMIT_FSIZE, limits.file_size_mb * mb, limits.file_size_mb * mb),
        (resource.RLIMIT_NOFILE, limits.max_open_files, limits.max_open_files),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    # Root ignores RLIMIT_NPROC, and for anyone else it counts every task of that uid.
    if plan.run_as_uid is not None:
        tasks = _tasks_of(plan.run_as_uid) + _SPARE_TASKS
        settings.append((resource.RLIMIT_NPROC, tasks, tasks))
    elif os.geteuid() != 0:
        tasks = _tasks_of(os.geteuid()) + _SPARE_TASKS
        settings.append((resource.RLIMIT_NPROC, tasks, tasks))

    def apply() -> None:
        for which, soft, hard in settings:
            resource.setrlimit(which, (soft, hard))

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
