"""Run LLM-written Python for the *coding* action, isolated from the machine.

Layers, outermost first (``../shared/reference/dependencies.md`` §8):

1. Linux namespaces via ``unshare``: an empty network namespace (no network at all), a pid
   namespace (every process dies with it), mount/ipc/uts namespaces, and a fresh tmpfs
   (``nodev,nosuid,noexec``, size-capped) over the empty working directory.
2. As root, the interpreter then runs as ``nobody`` with no capabilities (``setpriv``), its
   prefix bind-mounted read-only where that uid can reach it: root-only files are out of
   reach even if the audit hook is bypassed, and RLIMIT_NPROC applies. As another user,
   ``unshare --map-root-user`` provides the namespaces and the user's own rights apply.
3. ``python -I -S -B``: isolated interpreter, standard library only, cleared environment,
   a fresh temporary directory (deleted afterwards) as the working directory.
4. rlimits set in ``preexec_fn`` (CPU, address space, file size, open files, no core dumps,
   processes), a new session killed as a group, and an asyncio wall-clock timeout.
5. An audit hook inside the child (``child.py``): no sockets, processes, ctypes,
   frame introspection, or files outside the working directory and the standard library.

Where no namespace can be created :meth:`Sandbox.run` raises ``SandboxUnavailable``: the
audit hook alone is not a boundary (PEP 578), so code never runs with only that.
The wrappers of layers 1-2, their directories and the rlimits of layer 4 are built in
``isolation``; this module picks one and runs the child.

Usage::

    sandbox = Sandbox(SandboxLimits(cpu_s=2, wall_s=5))
    usable, reason = sandbox.availability()
    result = await sandbox.run("result = sum(x['n'] for x in data['rows'])", {"rows": rows})
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from deepsearch.clock import Clock, SystemClock
from deepsearch.errors import SandboxUnavailable
from deepsearch.sandbox import process, seccomp
from deepsearch.sandbox.isolation import (
    ENABLE_HINT,
    Isolation,
    IsolationPlan,
    SandboxDirs,
    SandboxLimits,
    child_env,
    launcher,
    limit_setter,
    unshare_candidates,
)

_CHILD_SOURCE = Path(__file__).with_name("child.py")
_HOOK_SOURCE = Path(__file__).with_name("hook.py")
_PROBE_TIMEOUT_S = 10.0
_DRAIN_AFTER_KILL_S = 2.0
_READ_CHUNK = 65536


class SandboxResult(BaseModel):
    """What one run produced."""

    ok: bool
    stdout: str
    stderr: str
    result: str | None
    """str()/repr() of the variable `result` (or else `output`) when the code set one."""
    error: str | None
    """One line: 'timeout: ...', 'memory: ...', 'blocked: <event>', or 'Type: message (line N)'."""
    duration_s: float


# The wrappers whose check passed in this process, as their JSON. The kernel, util-linux
# and the interpreter a wrapper names do not change under a running process, so a later
# Sandbox (each `serve` request, each library call) reuses the answer instead of starting
# the whole chain again (~40 ms of CPU). A failure is checked again: it may have been load.
_PASSED: set[str] = set()


# Looks `unshare_candidates` up in this module, so a test can swap the candidates here.
def probe_isolation(isolation: Isolation) -> IsolationPlan:
    """The strongest wrapper that really works here, found by running ``pass`` through it
    (once per process for a wrapper that passes)."""
    if isolation == "none-unsafe":
        return IsolationPlan(usable=True, reason="no isolation (tests only)")
    if sys.platform != "linux":
        return IsolationPlan(usable=False, reason=f"namespaces need Linux, not {sys.platform}")
    if not seccomp.supported():
        return IsolationPlan(
            usable=False, reason=f"no seccomp syscall table for {seccomp.machine()}"
        )
    failures = []
    for plan in unshare_candidates():
        key = plan.model_dump_json()
        failure = None if key in _PASSED else check_plan(plan)
        if failure is None:
            _PASSED.add(key)
            reason = f"{plan.reason}, seccomp: net/pid/mount namespaces"
            return plan.model_copy(update={"reason": reason})
        failures.append(f"{plan.reason}: {failure}")
    why = "; ".join(failures) or "util-linux's unshare, mount, pivot_root or setpriv is missing"
    return IsolationPlan(usable=False, reason=f"{why} (to enable: {ENABLE_HINT})")


def _start(
    limits: SandboxLimits, plan: IsolationPlan
) -> tuple[list[str], Callable[[], None] | None]:
    """What goes before the wrapper, and the preexec_fn (only when no launcher exists)."""
    start = launcher(limits, plan)
    if start is None:
        return [], limit_setter(limits, plan)
    return start, None


# The same for every run of the process: built and read once.
@functools.cache
def _filter_hex() -> str:
    return seccomp.build_filter().hex()


@functools.cache
def _hook_source() -> str:
    return _HOOK_SOURCE.read_text("utf-8")


def _request(
    plan: IsolationPlan,
    dirs: SandboxDirs,
    code: str,
    data: object,
    fd: int,
    max_chars: int,
    hook: bool = True,
) -> bytes:
    """The child's stdin: the code, its data, and how to confine itself."""
    request = {
        "code": code,
        "data": data,
        "workdir": dirs.workdir(plan),
        "envelope_fd": fd,
        "max_chars": max_chars,
        "seccomp": _filter_hex() if plan.seccomp else "",
        "hook": hook,
        "hook_source": _hook_source(),
    }
    return json.dumps(request, default=str).encode()


def check_plan(plan: IsolationPlan) -> str | None:
    """None when the plan runs the real bootstrap (filter included) to the end, else why."""
    import subprocess  # synchronous: the probe runs once per Sandbox

    limits = SandboxLimits()
    with SandboxDirs() as dirs:
        start, preexec = _start(limits, plan)
        argv = start + dirs.command(plan, 1)
        argv += ["-I", "-S", "-B", "-c", _CHILD_SOURCE.read_text("utf-8")]
        read_end, write_end = os.pipe()
        try:
            done = subprocess.run(
                argv,
                input=_request(plan, dirs, "result = 'ok'", {}, write_end, 100),
                capture_output=True,
                timeout=_PROBE_TIMEOUT_S,
                env=child_env(dirs.workdir(plan)),
                cwd=dirs.work,
                pass_fds=(write_end,),
                preexec_fn=preexec,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        finally:
            os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            envelope = pipe.read(4096)
    if done.returncode == 0 and b'"result": "ok"' in envelope:
        return None
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    said = envelope.decode("utf-8", "replace") or (lines[-1] if lines else "no output")
    return f"exit {done.returncode}: {said}"[:500]


def _text(raw: bytes, total: int, max_chars: int) -> str:
    text = raw.decode("utf-8", "replace")
    if len(text) > max_chars or total > len(raw):
        text = text[:max_chars] + f"\n[output truncated: {total} bytes in all]"
    return text


class Sandbox:
    """Runs code in a fresh, isolated interpreter per call. Injectable: the agent holds one.

    ``isolation``: "auto"/"unshare" use namespaces via ``unshare`` (refusing to run where
    they cannot be created); "none-unsafe" runs with rlimits and the audit hook only and
    exists for tests of those layers — it is never a default and no setting selects it.
    ``probe`` replaces the availability probe (tests inject an unavailable result);
    ``clock`` times each run (``duration_s``).
    """

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        isolation: Isolation = "auto",
        probe: Callable[[], IsolationPlan] | None = None,
        clock: Clock | None = None,
        audit_hook: bool = True,
    ) -> None:
        self.limits = limits or SandboxLimits()
        # False only in tests that prove the kernel's layers hold without the hook.
        self._audit_hook = audit_hook
        self._clock = clock or SystemClock()
        self.isolation = isolation
        self._probe = probe or (lambda: probe_isolation(isolation))
        self._plan: IsolationPlan | None = None
        # One probe however many threads ask at once (the run's gate, a coding step).
        self._plan_lock = threading.Lock()
        self._bootstrap = _CHILD_SOURCE.read_text(encoding="utf-8")

    def availability(self) -> tuple[bool, str]:
        """(usable, reason); the probe runs once and is cached."""
        plan = self._get_plan()
        return plan.usable, plan.reason

    def _get_plan(self) -> IsolationPlan:
        with self._plan_lock:
            if self._plan is None:
                self._plan = self._probe()
            return self._plan

    async def run(self, code: str, data: dict[str, Any]) -> SandboxResult:
        """Run ``code`` with ``data`` bound to a variable of that name.

        Raises:
            SandboxUnavailable: no real isolation on this machine (with the reason).
        """
        # The probe blocks (it starts an interpreter): off the event loop, once.
        plan = self._plan if self._plan is not None else await asyncio.to_thread(self._get_plan)
        if not plan.usable:
            raise SandboxUnavailable(f"coding action refused: {plan.reason}")
        with SandboxDirs() as dirs:
            return await self._run_in(plan, dirs, code, data)

    async def _run_in(
        self, plan: IsolationPlan, dirs: SandboxDirs, code: str, data: dict[str, Any]
    ) -> SandboxResult:
        limits = self.limits
        started = self._clock.monotonic()
        read_end, write_end = os.pipe()
        request = _request(
            plan, dirs, code, data, write_end, limits.max_output_chars, self._audit_hook
        )
        proc = await self._spawn(plan, dirs, read_end, write_end)
        cap = limits.max_output_chars * 4 + 4
        ended = await process.supervise(proc, read_end, request, cap, limits.wall_s)
        elapsed = self._clock.monotonic() - started
        error, result = _verdict(proc.returncode, ended, limits, elapsed)
        return SandboxResult(
            ok=error is None,
            stdout=_text(ended.out, ended.out_total, limits.max_output_chars),
            stderr=_text(ended.err, ended.err_total, limits.max_output_chars),
            result=result,
            error=error,
            duration_s=round(elapsed, 3),
        )

    async def _spawn(
        self, plan: IsolationPlan, dirs: SandboxDirs, read_end: int, write_end: int
    ) -> process.Child:
        """The wrapped interpreter, started in its own session (off the event loop:
        process.py says why); the parent's copy of the envelope pipe's write end is
        closed whatever happens."""
        start, preexec = _start(self.limits, plan)
        argv = start + dirs.command(plan, 2 * self.limits.file_size_mb)
        argv += ["-I", "-S", "-B", "-c", self._bootstrap]
        try:
            return await process.start(
                argv,
                cwd=dirs.work,
                env=child_env(dirs.workdir(plan)),
                preexec=preexec,
                pass_fds=(write_end,),
            )
        except OSError as exc:
            os.close(read_end)
            raise SandboxUnavailable(f"could not start the sandbox: {exc}") from exc
        finally:
            os.close(write_end)


def _verdict(
    returncode: int | None, ended: process.Ended, limits: SandboxLimits, elapsed_s: float
) -> tuple[str | None, str | None]:
    """(error, result) from how the child ended and what its envelope said."""
    envelope = ended.envelope
    if ended.timed_out:
        return f"timeout: exceeded the wall-clock limit of {limits.wall_s:g} s", None
    try:
        parsed = json.loads(envelope) if envelope else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        result, error = parsed.get("result"), parsed.get("error")
        return (str(error) if error else None), (str(result) if result is not None else None)
    # No envelope: the interpreter was killed or crashed before reporting.
    code = returncode or 0
    signum = -code if code < 0 else code - 128 if code > 128 else 0
    if signum == signal.SIGXCPU:
        return f"timeout: exceeded the CPU limit of {limits.cpu_s} s", None
    if signum == signal.SIGKILL:
        # The CPU hard limit also kills with SIGKILL, but CPU time never exceeds wall
        # time: a SIGKILL sooner than the CPU limit came from the out-of-memory killer.
        if elapsed_s >= limits.cpu_s:
            return f"timeout: exceeded the CPU limit of {limits.cpu_s} s", None
        return f"memory: killed by SIGKILL after {elapsed_s:.2f} s (out of memory)", None
    if signum:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return f"crashed: killed by {name}", None
    return f"crashed: exited with status {code} without reporting", None
