"""The runner's rules without a sandbox: which wrapper the probe picks and why it
refuses, what the child is asked to do, how a run is started and ended and how its
end is named. The process layer is replaced by a recording fake; the few real
processes here are plain interpreters with no namespaces (a probe's own check)."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

import deepsearch.sandbox.runner as runner
from deepsearch.errors import SandboxUnavailable
from deepsearch.sandbox import process, seccomp
from deepsearch.sandbox.isolation import IsolationPlan, SandboxDirs, SandboxLimits
from deepsearch.sandbox.process import Ended
from deepsearch.sandbox.runner import Sandbox, _request, _text, _verdict, check_plan
from tests.fakes.clock import FakeClock

LIMITS = SandboxLimits(cpu_s=2, wall_s=3, memory_mb=256, max_output_chars=100)
BARE = IsolationPlan(usable=True, reason="none")  # no wrapper: the interpreter itself
WRAPPED = IsolationPlan(usable=True, reason="w", prefix=["/wrap", "{root}"], seccomp=True)


def ended(envelope: bytes = b"", *, timed_out: bool = False, out: bytes = b"") -> Ended:
    return Ended(out, len(out), b"", 0, envelope, timed_out)


# --- naming how a run ended -------------------------------------------------------------


def test_a_run_past_the_wall_clock_is_a_timeout_whatever_it_reported() -> None:
    envelope = b'{"result": "1", "error": null}'
    assert _verdict(0, ended(envelope, timed_out=True), LIMITS, 3.0) == (
        "timeout: exceeded the wall-clock limit of 3 s",
        None,
    )
    half = LIMITS.model_copy(update={"wall_s": 0.5})
    assert _verdict(None, ended(timed_out=True), half, 0.5)[0] == (
        "timeout: exceeded the wall-clock limit of 0.5 s"
    )


def test_the_envelope_gives_the_result_and_the_error_as_text() -> None:
    assert _verdict(0, ended(b'{"result": "42", "error": null}'), LIMITS, 0.1) == (None, "42")
    assert _verdict(0, ended(b'{"result": 0, "error": ""}'), LIMITS, 0.1) == (None, "0")
    assert _verdict(0, ended(b'{"result": null, "error": "E: x"}'), LIMITS, 0.1) == ("E: x", None)
    assert _verdict(0, ended(b'{"error": 7}'), LIMITS, 0.1) == ("7", None)
    # An envelope wins over the exit status: the code reported before it ended.
    assert _verdict(-9, ended(b'{"result": "r"}'), LIMITS, 0.1) == (None, "r")


def test_an_unreadable_envelope_is_read_from_the_exit_status() -> None:
    for envelope in (b"{not json", b'["result", "r"]', b'"r"'):
        assert _verdict(7, ended(envelope), LIMITS, 0.1) == (
            "crashed: exited with status 7 without reporting",
            None,
        )


def test_a_sigkill_at_the_cpu_hard_limit_is_a_cpu_timeout_and_sooner_is_memory() -> None:
    cpu = "timeout: exceeded the CPU limit of 2 s"
    assert _verdict(-signal.SIGKILL, ended(), LIMITS, 2.0) == (cpu, None)
    assert _verdict(128 + signal.SIGKILL, ended(), LIMITS, 2.5) == (cpu, None)  # via sh
    assert _verdict(-signal.SIGKILL, ended(), LIMITS, 1.999) == (
        "memory: killed by SIGKILL after 2.00 s (out of memory)",
        None,
    )
    assert _verdict(137, ended(), LIMITS, 0.25)[0] == (
        "memory: killed by SIGKILL after 0.25 s (out of memory)"
    )


def test_sigxcpu_is_a_cpu_timeout_however_early() -> None:
    assert _verdict(128 + signal.SIGXCPU, ended(), LIMITS, 0.0) == (
        "timeout: exceeded the CPU limit of 2 s",
        None,
    )


def test_other_endings_are_crashes_named_by_signal_or_status() -> None:
    assert _verdict(128 + signal.SIGSEGV, ended(), LIMITS, 9)[0] == "crashed: killed by SIGSEGV"
    assert _verdict(-signal.SIGABRT, ended(), LIMITS, 9)[0] == "crashed: killed by SIGABRT"
    assert _verdict(128 + 100, ended(), LIMITS, 9)[0] == "crashed: killed by signal 100"
    assert (
        _verdict(128, ended(), LIMITS, 9)[0] == "crashed: exited with status 128 without reporting"
    )
    assert _verdict(129, ended(), LIMITS, 9)[0] == "crashed: killed by SIGHUP"
    assert _verdict(1, ended(), LIMITS, 9)[0] == "crashed: exited with status 1 without reporting"
    assert _verdict(None, ended(), LIMITS, 9)[0] == (
        "crashed: exited with status 0 without reporting"
    )


# --- output -------------------------------------------------------------------------------


def test_output_is_cut_at_the_cap_and_says_how_much_there_was() -> None:
    assert _text(b"abc", 3, 100) == "abc"
    assert _text(b"a" * 100, 100, 100) == "a" * 100
    assert _text(b"a" * 101, 101, 100) == "a" * 100 + "\n[output truncated: 101 bytes in all]"
    # Fewer bytes kept than written (the reader's cap): truncated although short.
    assert _text(b"ab", 5000, 100) == "ab\n[output truncated: 5000 bytes in all]"
    assert _text("é".encode() + b"\xff", 3, 100) == "é\ufffd"


# --- what the child is asked -------------------------------------------------------------


def test_the_request_carries_the_code_its_data_and_how_to_confine_itself() -> None:
    with SandboxDirs() as dirs:
        day = datetime.date(2024, 1, 2)
        wrapped = json.loads(_request(WRAPPED, dirs, "x = 1", {"d": day}, 7, 123))
        bare = json.loads(_request(BARE, dirs, "y", {}, 8, 9, hook=False))
    assert wrapped["code"] == "x = 1" and wrapped["data"] == {"d": "2024-01-02"}
    assert wrapped["workdir"] == "/deepsearch-work" and bare["workdir"] == dirs.work
    assert (wrapped["envelope_fd"], wrapped["max_chars"]) == (7, 123)
    assert wrapped["seccomp"] == seccomp.build_filter().hex() and bare["seccomp"] == ""
    assert wrapped["hook"] is True and bare["hook"] is False
    hook_py = Path(runner.__file__).with_name("hook.py").read_text("utf-8")
    assert wrapped["hook_source"] == hook_py == bare["hook_source"]


# --- the probe ------------------------------------------------------------------------------


def test_the_unsafe_mode_needs_no_probe() -> None:
    plan = runner.probe_isolation("none-unsafe")
    assert plan.usable and plan.reason == "no isolation (tests only)" and plan.prefix == []


def test_no_namespaces_off_linux_and_no_filter_without_a_syscall_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    plan = runner.probe_isolation("auto")
    assert (plan.usable, plan.reason) == (False, "namespaces need Linux, not darwin")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(seccomp, "supported", lambda: False)
    monkeypatch.setattr(seccomp, "machine", lambda: "riscv64")
    plan = runner.probe_isolation("unshare")
    assert (plan.usable, plan.reason) == (False, "no seccomp syscall table for riscv64")


def test_the_probe_takes_the_first_wrapper_that_works_and_says_why_others_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = IsolationPlan(usable=True, reason="a", prefix=["a"])
    b = IsolationPlan(usable=True, reason="b", prefix=["b"])
    c = IsolationPlan(usable=True, reason="c", prefix=["c"])
    failures = {"a": "exit 1: no", "b": None, "c": None}
    monkeypatch.setattr(runner, "_PASSED", set())  # nothing passed yet in this process
    monkeypatch.setattr(runner, "unshare_candidates", lambda: [a, b, c])
    monkeypatch.setattr(runner, "check_plan", lambda plan: failures[plan.reason])
    plan = runner.probe_isolation("auto")
    assert plan.usable and plan.prefix == ["b"]
    assert plan.reason == "b, seccomp: net/pid/mount namespaces"
    failures.update(b="exit 2: x", c="timed out")
    monkeypatch.setattr(runner, "_PASSED", set())  # another process, where "b" fails
    plan = runner.probe_isolation("auto")
    assert not plan.usable
    assert plan.reason == (
        f"a: exit 1: no; b: exit 2: x; c: timed out (to enable: {runner.ENABLE_HINT})"
    )


def test_without_util_linux_the_probe_names_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "unshare_candidates", list)
    plan = runner.probe_isolation("auto")
    assert not plan.usable
    assert plan.reason == (
        "util-linux's unshare, mount, pivot_root or setpriv is missing "
        f"(to enable: {runner.ENABLE_HINT})"
    )


def test_a_plan_passes_its_check_only_by_running_the_bootstrap_to_the_end() -> None:
    # No wrapper, but the real bootstrap with its seccomp filter, in a plain interpreter.
    assert check_plan(BARE.model_copy(update={"seccomp": True})) is None
    failing = BARE.model_copy(update={"python": "/bin/false"})
    assert check_plan(failing) == "exit 1: no output"
    missing = BARE.model_copy(update={"python": "/nonexistent/python"})
    assert "No such file or directory" in (check_plan(missing) or "")


def test_a_plan_whose_wrapper_fails_is_refused_with_its_last_words(tmp_path: Path) -> None:
    script = tmp_path / "wrapper"
    script.write_text("#!/bin/sh\necho first >&2\necho 'no namespace here' >&2\nexit 4\n")
    script.chmod(0o755)
    plan = BARE.model_copy(update={"python": str(script)})
    assert check_plan(plan) == "exit 4: no namespace here"
    chatty = tmp_path / "chatty"
    chatty.write_text(f"#!/bin/sh\necho {'x' * 600} >&2\nexit 5\n")
    chatty.chmod(0o755)
    said = check_plan(BARE.model_copy(update={"python": str(chatty)}))
    assert said == f"exit 5: {'x' * 492}"  # one line, 500 characters in all


# A wrapper in place of unshare: it checks how the probe started it and answers for the
# child (whose work directory, /deepsearch-work, exists only in a real new root).
CHECKING_WRAPPER = """
import json, os, resource, sys
tmpfs_mb, flags = sys.argv[1], sys.argv[3:7]
request = json.loads(sys.stdin.read())
problems = [
    tmpfs_mb != "1" and f"tmpfs {tmpfs_mb} MB",
    flags != ["-I", "-S", "-B", "-c"] and f"flags {flags}",
    os.path.basename(os.getcwd()) != "work" and f"cwd {os.getcwd()}",
    os.environ.get("HOME") != "/deepsearch-work" and "HOME",
    "PROBE_SECRET" in os.environ and "the environment was passed on",
    resource.getrlimit(resource.RLIMIT_NOFILE) != (64, 64) and "no open-files limit",
    request["code"] != "result = 'ok'" and "code",
]
if any(problems):
    sys.exit(", ".join(p for p in problems if p))
os.write(request["envelope_fd"], b'{"result": "ok", "error": null}')
"""


def test_the_probe_starts_its_check_as_a_run_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBE_SECRET", "sk-probe")
    monkeypatch.setattr(runner, "launcher", lambda limits, plan: None)  # rlimits: preexec
    wrapper = [sys.executable, "-c", CHECKING_WRAPPER, "{tmpfs_mb}"]
    assert check_plan(BARE.model_copy(update={"prefix": wrapper})) is None


def test_a_plan_that_ends_well_without_reporting_is_refused() -> None:
    quiet = BARE.model_copy(update={"python": "/bin/true"})
    assert check_plan(quiet) == "exit 0: no output"


def test_a_probe_that_hangs_is_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "_PROBE_TIMEOUT_S", 0.05)
    stuck = BARE.model_copy(update={"prefix": ["/bin/sh", "-c", "exec sleep 30"]})
    said = check_plan(stuck) or ""
    assert "timed out after 0.05 seconds" in said, said


WRITES_GARBAGE = """
import json, os, sys
fd = json.loads(sys.stdin.read())["envelope_fd"]
os.write(fd, b"\\xff{" if sys.argv[1] == "envelope" else b"")
os.write(2, b"\\xfe stderr\\n")
sys.exit(1)
"""


@pytest.mark.parametrize("where", ["envelope", "stderr"])
def test_what_a_failed_probe_said_is_read_even_when_it_is_not_text(where: str) -> None:
    plan = BARE.model_copy(update={"prefix": [sys.executable, "-c", WRITES_GARBAGE, where]})
    expected = "\ufffd{" if where == "envelope" else "\ufffd stderr"
    assert check_plan(plan) == f"exit 1: {expected}"


def test_a_plan_whose_child_reports_another_result_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The filter is refused by the kernel: the bootstrap fails closed and says why.
    monkeypatch.setattr(runner, "_filter_hex", lambda: "06" * 8)
    said = check_plan(BARE.model_copy(update={"seccomp": True})) or ""
    assert said.startswith('exit 3: {"result": null, "error": "sandbox: '), said


# --- one run, with the process layer faked ---------------------------------------------------


class FakeProcess:
    """Records what the runner starts and supervises; ends as told."""

    def __init__(self, ending: Ended, returncode: int | None = 0) -> None:
        self.ending, self.returncode = ending, returncode
        self.started: dict[str, Any] = {}
        self.supervised: dict[str, Any] = {}
        self.fail_start: OSError | None = None

    async def start(self, argv: list[str], **kwargs: Any) -> Any:
        self.started = {"argv": argv, **kwargs}
        if self.fail_start is not None:
            raise self.fail_start
        return self

    async def supervise(
        self, child: Any, read_end: int, request: bytes, cap: int, wall_s: float
    ) -> Ended:
        self.supervised = {"child": child, "read_end": read_end, "request": request}
        self.supervised |= {"cap": cap, "wall": wall_s}
        os.close(read_end)
        return self.ending


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeProcess:
    proc = FakeProcess(ended(b'{"result": "done", "error": null}', out=b"printed"))
    monkeypatch.setattr(process, "start", proc.start)
    monkeypatch.setattr(process, "supervise", proc.supervise)
    return proc


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def new_fds(before: set[str]) -> set[str]:
    """Descriptors opened since ``before`` and still open: a leak. Not an equality: an
    earlier test's leftovers (its sockets, a loop's self-pipe) may be closed meanwhile by
    the collector (fds 19 and 22 went in one of 64 full runs)."""
    return open_fds() - before


def test_a_run_starts_the_wrapped_interpreter_with_its_limits(fake: FakeProcess) -> None:
    clock = FakeClock(tick=0.5)
    box = Sandbox(LIMITS, probe=lambda: BARE, clock=clock)
    out = asyncio.run(box.run("result = 1", {"n": 1}))
    assert out == runner.SandboxResult(
        ok=True, stdout="printed", stderr="", result="done", error=None, duration_s=0.5
    )
    argv = fake.started["argv"]
    assert argv[-5:-1] == ["-I", "-S", "-B", "-c"]
    assert argv[-1] == Path(runner.__file__).with_name("child.py").read_text("utf-8")
    assert fake.started["env"]["HOME"] == fake.started["cwd"]  # the bare plan's workdir
    assert fake.started["env"]["PATH"] == "/usr/bin:/bin"
    assert callable(fake.started["preexec"])  # no launcher without a wrapper: rlimits here
    (write_end,) = fake.started["pass_fds"]
    request = json.loads(fake.supervised["request"])
    assert request["envelope_fd"] == write_end and request["data"] == {"n": 1}
    assert request["code"] == "result = 1" and fake.supervised["child"] is fake
    assert request["max_chars"] == 100 and request["hook"] is True
    assert fake.supervised["cap"] == 100 * 4 + 4 and fake.supervised["wall"] == 3


def test_a_wrapped_run_is_started_by_the_launcher_with_the_file_size_tmpfs(
    fake: FakeProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "launcher", lambda limits, plan: ["/launch", str(limits.cpu_s)])
    plan = IsolationPlan(usable=True, reason="w", prefix=["/wrap", "{tmpfs_mb}"], python="/py")
    box = Sandbox(LIMITS.model_copy(update={"file_size_mb": 5}), probe=lambda: plan)
    out = asyncio.run(box.run("", {}))
    assert out.ok
    assert fake.started["argv"][:5] == ["/launch", "2", "/wrap", "10", "/py"]
    assert fake.started["preexec"] is None
    assert fake.started["env"]["HOME"] == "/deepsearch-work"


def test_a_run_killed_before_it_reported_is_named_from_its_exit_and_duration(
    fake: FakeProcess,
) -> None:
    fake.ending, fake.returncode = ended(), -signal.SIGKILL
    box = Sandbox(LIMITS, probe=lambda: BARE, clock=FakeClock(tick=0.12345))
    out = asyncio.run(box.run("x = [0] * 10**10", {}))
    assert out.error == "memory: killed by SIGKILL after 0.12 s (out of memory)"
    assert out.duration_s == 0.123 and not out.ok
    fake.returncode = 128 + signal.SIGKILL  # as the wrapper's shell reports it
    slow = Sandbox(LIMITS, probe=lambda: BARE, clock=FakeClock(tick=2.0))
    assert asyncio.run(slow.run("while True: pass", {})).error == (
        "timeout: exceeded the CPU limit of 2 s"
    )


def test_the_run_reports_the_child_s_error_and_the_hook_setting(fake: FakeProcess) -> None:
    fake.ending = ended(b'{"result": null, "error": "blocked: os.fork"}')
    box = Sandbox(LIMITS, probe=lambda: BARE, audit_hook=False)
    out = asyncio.run(box.run("import os; os.fork()", {}))
    assert not out.ok and out.error == "blocked: os.fork" and out.result is None
    assert json.loads(fake.supervised["request"])["hook"] is False


def test_a_pipe_end_is_not_leaked_when_the_sandbox_fails_to_start(fake: FakeProcess) -> None:
    fake.fail_start = FileNotFoundError(2, "No such file or directory")
    box = Sandbox(LIMITS, probe=lambda: BARE)
    before = open_fds()
    for _ in range(3):
        with pytest.raises(SandboxUnavailable) as raised:
            asyncio.run(box.run("result = 1", {}))
        assert str(raised.value) == (
            "could not start the sandbox: [Errno 2] No such file or directory"
        )
    assert new_fds(before) == set()


def test_the_parent_keeps_no_write_end_of_a_started_run(fake: FakeProcess) -> None:
    box = Sandbox(LIMITS, probe=lambda: BARE)
    before = open_fds()
    asyncio.run(box.run("result = 1", {}))
    assert new_fds(before) == set()


def test_an_unusable_plan_refuses_with_its_reason_and_probes_once() -> None:
    calls: list[int] = []

    def probe() -> IsolationPlan:
        calls.append(1)
        return IsolationPlan(usable=False, reason="no pid namespace")

    box = Sandbox(probe=probe)
    for _ in range(2):
        with pytest.raises(SandboxUnavailable) as raised:
            asyncio.run(box.run("result = 1", {}))
        assert str(raised.value) == "coding action refused: no pid namespace"
    assert box.availability() == (False, "no pid namespace") and calls == [1]


def test_a_sandbox_s_defaults() -> None:
    box = Sandbox(probe=lambda: BARE)
    assert box.limits == SandboxLimits()
    assert (box.limits.cpu_s, box.limits.wall_s, box.limits.memory_mb) == (5, 10, 512)
    assert (box.limits.file_size_mb, box.limits.max_output_chars) == (16, 20_000)
    assert box.limits.max_open_files == 64
    assert box.isolation == "auto" and box._audit_hook is True
    unsafe = Sandbox(isolation="none-unsafe")
    assert unsafe.availability() == (True, "no isolation (tests only)")
