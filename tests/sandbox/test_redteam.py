"""Red team: hostile programs against the real sandbox, with and without the audit hook.

Canaries planted before each run: a file only its owner may read (the secret ``P``), a
variable in the parent's environment, a loopback listener, a file outside the work
directory (``W``), and the host's shared folders (``/tmp``, ``/dev/shm``, ``/var/tmp``).
No program may reach any of them: not through the sandbox directly, not as root, not as
an ordinary user (a second process under another uid), not from a concurrent run, and
not through a research run whose page tells the model to run the program. The parent
keeps its pace (a heartbeat) while they run, and a ``kill -9`` of the parent leaves no
sandbox process behind.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from deepsearch.sandbox.runner import Sandbox, SandboxLimits, SandboxResult
from tests.sandbox.attacks import BATCH, HARNESS, KILLERS
from tests.sandbox.test_sandbox import LoopbackServer

# Its own worker, beside tests/sandbox/test_sandbox.py's (the two groups run in parallel).
pytestmark = pytest.mark.xdist_group("redteam")

LIMITS = SandboxLimits(cpu_s=1, wall_s=3, memory_mb=256, max_output_chars=200_000)
CANARY = "canary-" + secrets.token_hex(8)
PARENT_ENV = "DEEPSEARCH_REDTEAM_CANARY"
SHARED_DIRS = ("/tmp", "/dev/shm", "/var/tmp")
USER_UID = 4242
HERE = Path(__file__).parent
REPO = HERE.parents[1]


@dataclass
class Canaries:
    """What the hostile programs are after, and the checks that they did not get it."""

    folder: Path
    server: LoopbackServer
    mark: str = field(default_factory=lambda: "ds-redteam-" + secrets.token_hex(4))

    @property
    def secret(self) -> Path:
        return self.folder / "id_rsa"

    @property
    def victim(self) -> Path:
        return self.folder / "bashrc"

    def names(self) -> dict[str, object]:
        return {
            "P": str(self.secret),
            "D": str(self.folder),
            "W": str(self.victim),
            "PORT": self.server.port,
            "PARENT_ENV": PARENT_ENV,
            "MARK": self.mark,
        }

    def assert_untouched(self, *texts: str) -> None:
        seen = "\n".join(texts)
        assert CANARY not in seen
        assert self.server.reached() == 0
        assert self.secret.read_text() == CANARY and (self.secret.stat().st_mode & 0o777) == 0o600
        assert self.victim.read_text() == "# untouched\n"
        for shared in SHARED_DIRS:
            made = [n for n in os.listdir(shared) if n.startswith(self.mark)]
            assert made == [], shared
        assert not Path("/usr", self.mark).exists()


def plant(folder: Path, uid: int | None = None) -> None:
    folder.mkdir(mode=0o700, exist_ok=True)
    (folder / "id_rsa").write_text(CANARY)
    (folder / "id_rsa").chmod(0o600)
    (folder / "bashrc").write_text("# untouched\n")
    if uid is not None:
        for path in (folder, folder / "id_rsa", folder / "bashrc"):
            os.chown(path, uid, uid)


@pytest.fixture(scope="module", autouse=True)
def kernel_layers() -> None:
    """Where the kernel lacks a layer the sandbox needs, these tests skip with the reason
    `deepsearch doctor` gives; in CI (root on Linux, where every layer works) a refusal
    is a failure: a broken probe must not turn the red team into skips."""
    usable, reason = Sandbox(LIMITS).availability()
    if not usable:
        if os.environ.get("CI"):
            pytest.fail(f"the sandbox is unavailable in CI: {reason}")
        pytest.skip(f"the sandbox is unavailable here: {reason}")


@pytest.fixture(scope="module")
def canaries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Canaries]:
    folder = tmp_path_factory.mktemp("redteam") / "home"
    plant(folder)
    server = LoopbackServer()
    try:
        yield Canaries(folder, server)
    finally:
        server.close()


@pytest.fixture(autouse=True)
def parent_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value only the parent's environment holds, for every run of this module."""
    monkeypatch.setenv(PARENT_ENV, CANARY)


def batch_code() -> str:
    return HARNESS


def texts(out: SandboxResult) -> list[str]:
    return [out.stdout, out.stderr, out.result or "", out.error or ""]


async def _with_heartbeat(coro: Any, period: float = 0.02) -> tuple[Any, float]:
    """Run ``coro`` while a heartbeat ticks; the result and the worst lateness of a tick."""
    worst, stop = 0.0, asyncio.Event()
    loop = asyncio.get_running_loop()

    async def beat() -> None:
        nonlocal worst
        while not stop.is_set():
            due = loop.time() + period
            await asyncio.sleep(period)
            worst = max(worst, loop.time() - due)

    ticker = asyncio.ensure_future(beat())
    try:
        return await coro, worst
    finally:
        stop.set()
        await ticker


@pytest.mark.parametrize("hook", [True, False], ids=["with the hook", "kernel layers alone"])
def test_no_hostile_program_reaches_a_canary(canaries: Canaries, hook: bool) -> None:
    assert len(BATCH) + len(KILLERS) >= 60
    box = Sandbox(LIMITS, audit_hook=hook)
    data = {"attacks": BATCH, "names": canaries.names()}
    out = asyncio.run(box.run(batch_code(), data))
    assert out.result is not None, out.error
    report = json.loads(out.result)
    assert set(report["outcomes"]) == set(BATCH)  # every attack ran to its end or error
    canaries.assert_untouched(*texts(out))
    if os.geteuid() == 0:  # root's runs each get a fresh unprivileged uid
        identity = next(leak for leak in report["leaks"] if leak.startswith("uid="))
        assert identity != "uid=0 gid=0" and int(identity.split()[0][4:]) >= 0x7E000000
    failed = {k: v for k, v in report["outcomes"].items() if v != "ran"}
    # Attacks that need a door the kernel closes fail, with the hook or without it.
    for name in ("os.system", "os.fork", "subprocess", "socket", "_socket", "dir_fd climb"):
        assert name in failed, name
    if hook:  # the routes the hook used to miss (PEP 578 events without a dir_fd, ...)
        assert failed["dir_fd climb"].startswith("PermissionError: blocked: relative path")
        assert failed["dotted create_dynamic"] == (
            "PermissionError: blocked: import x._posixsubprocess"
        )
        assert failed["listdir fd"].startswith("PermissionError: blocked")
    assert failed["mkfifo"].startswith("AttributeError")  # gone from os and posix
    if not hook:
        # Only the kernel stood in the way: the filter and the new root, not the hook.
        assert "blocked" not in failed["os.fork"] and "blocked" not in failed["socket"]
        assert failed["dir_fd climb"].startswith(("FileNotFoundError", "NotADirectoryError"))


# In a parent of its own: a pytest worker's heap (its garbage collector's pauses) and its
# threads are noise of the test, not of the sandbox. It prints what it measured.
KILLERS_PARENT = """
import asyncio, json, sys
from deepsearch.sandbox.runner import Sandbox, SandboxLimits
from tests.sandbox.attacks import KILLERS
from tests.sandbox.test_redteam import _with_heartbeat
box = Sandbox(SandboxLimits.model_validate_json(sys.argv[1]), audit_hook=False)
box.availability()
_, noise = asyncio.run(_with_heartbeat(asyncio.sleep(0.3)))

async def all_of_them():
    return await asyncio.gather(*(box.run(code, {}) for code in KILLERS.values()))

outs, late = asyncio.run(_with_heartbeat(all_of_them()))
print(json.dumps({'noise': noise, 'late': late, 'outs': [o.model_dump() for o in outs]}))
"""


# A control beside it: the same heartbeat in a process that runs no sandbox, until its
# stdin closes, after the parent ended: a window that covers the parent's whatever the
# load (a fixed 2.5 s had ended before a loaded machine's parent began its batch). What
# the machine's load does to both is not the sandbox's.
CONTROL = """
import asyncio, sys, threading
async def beat():
    loop, worst, done = asyncio.get_running_loop(), 0.0, asyncio.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(done.set)),
                     daemon=True).start()
    while not done.is_set():
        due = loop.time() + 0.02
        await asyncio.sleep(0.02)
        worst = max(worst, loop.time() - due)
    return worst
print(asyncio.run(beat()))
"""


def test_programs_that_exhaust_the_interpreter_end_within_limits(canaries: Canaries) -> None:
    """All at once, kernel layers alone, while the parent's heartbeat is timed against
    the machine's own noise (measured first, and by a control process beside it): what
    the sandbox may add to it is 0.1 s on a quiet machine (more under load: see below)."""
    for _attempt in range(2):
        late, noise, report = _exhausting_batch()
        _check_the_killers_ended(report, canaries)
        # 0.1 s over the noise, plus twice the noise: under load the parent's own work
        # (reading 20 MB of runaway output) stretches with its share of the CPU, which
        # the idle control does not show (0.18-0.28 s against 0.03-0.05 s at a load of
        # 8-10; once in 64 suite runs 0.137 s against 0.008). So a late heartbeat gets
        # one more batch; a loop blocked for a bomb's 1.5 s is late in both, at any load.
        if late <= 0.1 + 3 * noise:
            break
    assert late <= 0.1 + 3 * noise, f"the parent's heartbeat was {late:.3f} s late ({noise:.3f})"


def _exhausting_batch() -> tuple[float, float, dict[str, Any]]:
    """(the parent's heartbeat lateness, the machine's noise, the parent's report)."""
    control = subprocess.Popen(
        [sys.executable, "-c", CONTROL], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    done = subprocess.run(
        # 1.5 s of wall clock: the CPU-bound ones end there at the latest, under load too.
        [
            sys.executable,
            "-c",
            KILLERS_PARENT,
            LIMITS.model_copy(update={"wall_s": 1.5}).model_dump_json(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    control_late = float(control.communicate(input="", timeout=30)[0])
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    return report["late"], max(report["noise"], control_late), report


def _check_the_killers_ended(report: dict[str, Any], canaries: Canaries) -> None:
    outs = [SandboxResult.model_validate(out) for out in report["outs"]]
    for name, out in zip(KILLERS, outs, strict=True):
        assert not out.ok or name in ("kill the parent", "runaway output"), name
        # Each ended at its limits, by the sandbox's own clock: a total for the whole
        # batch also counted how long a loaded machine took to start eight nice'd
        # interpreters (14 s at a load of 12), which no limit bounds.
        assert out.duration_s < 1.5 + 3, (name, out.duration_s)
    runaway = outs[list(KILLERS).index("runaway output")]
    assert "[output truncated: 20002000 bytes in all]" in runaway.stdout
    errors = dict(zip(KILLERS, (out.error or "" for out in outs), strict=True))
    assert errors["memory bomb"].startswith("memory"), errors["memory bomb"]
    assert "Too many open files" in errors["fd exhaustion"], errors["fd exhaustion"]
    canaries.assert_untouched(*(text for out in outs for text in texts(out)))


def test_two_concurrent_runs_cannot_see_each_other(canaries: Canaries) -> None:
    box = Sandbox(LIMITS, audit_hook=False)
    keeper = (
        "import time\nopen('other-run.txt', 'w').write(data['canary'])\nwritten = time.time()\n"
        "time.sleep(data['hold_s'])\nresult = [open('other-run.txt').read(), written, time.time()]"
    )
    seeker = (
        "import os, time\ntime.sleep(data['wait_s'])\nbegan = time.time()\nfound = []\n"
        "found.append(str(os.listdir('/')))\n"
        "for top in ('/deepsearch-work', '/dev', '/etc', '/tmp', '/proc', '/home', '/root'):\n"
        "    for base, dirs, files in os.walk(top):\n"
        "        dirs[:] = [d for d in dirs if d != '.pyenv']\n"
        "        for f in files:\n"
        "            try:\n                found.append(open(os.path.join(base, f), errors='replace').read(200))\n"
        "            except OSError:\n                pass\n"
        "result = ['|'.join(found), began, time.time()]"
    )

    async def both(hold_s: float, wait_s: float) -> tuple[SandboxResult, SandboxResult]:
        first = asyncio.ensure_future(box.run(keeper, {"canary": CANARY, "hold_s": hold_s}))
        second = asyncio.ensure_future(box.run(seeker, {"wait_s": wait_s}))
        return await first, await second

    # Nothing may pass between the runs, so they are timed: the keeper holds the file while
    # the seeker searches, as their own timestamps show (the kernel's one clock); a loaded
    # machine that started them too far apart for that repeats them, with longer waits.
    for hold_s, wait_s in ((0.15, 0.03), (0.5, 0.2), (2.0, 0.5)):
        kept, sought = asyncio.run(both(hold_s, wait_s))
        assert kept.ok and sought.ok, (kept.error, sought.error)
        held, written, read = ast.literal_eval(kept.result or "")
        assert held == CANARY  # the first run really held the canary meanwhile
        assert CANARY not in "".join(texts(sought))
        canaries.assert_untouched(*texts(sought))
        _, began, ended = ast.literal_eval(sought.result or "")
        if written < began and ended < read:
            break


# --- an ordinary user --------------------------------------------------------------------

USER_SCRIPT = """
import asyncio, json, sys
from deepsearch.sandbox.runner import Sandbox, SandboxLimits
cfg = json.load(sys.stdin)
limits = SandboxLimits(cpu_s=1, wall_s=3, memory_mb=256, max_output_chars=200000)
outs = []
usable, reason = Sandbox(limits).availability()
for hook in (False,):  # the kernel's layers alone: the hook's layer is tested as root
    box = Sandbox(limits, audit_hook=hook)
    out = asyncio.run(box.run(cfg['code'], {'attacks': cfg['attacks'], 'names': cfg['names']}))
    outs.append(out.model_dump())
print(json.dumps({'uid': __import__('os').getuid(), 'usable': usable, 'reason': reason,
                  'outs': outs}))
"""


# In a private mount namespace: the checkout's entries bound into $2/repo, a tmpfs any
# uid can enter (the checkout's own folder may not be: `mktemp -d` makes it 0700, and a
# bind mount of it keeps that mode), then root's own home replaced by an empty tmpfs
# with only the interpreter's prefix bound back (pyenv keeps it under /root).
_AS_USER = (
    'set -e; P=$1 R=$2; shift 2; mkdir "$R/repo"; mount -t tmpfs -o mode=0755 none "$R/repo"'
    '; for E in "$0"/* "$0"/.[!.]*; do [ -e "$E" ] || continue; N="$R/repo/${E##*/}"'
    '; if [ -d "$E" ]; then mkdir "$N"; else : > "$N"; fi; mount --bind "$E" "$N"; done'
    '; case "$P" in /root/*) T=$(mktemp -d); mount --bind "$P" "$T"'
    '; mount -t tmpfs -o mode=0755 none /root; mkdir -p "$P"; mount --move "$T" "$P";; esac'
    '; cd "$R/repo"; exec "$@"'
)


def _as_user_command(home: Path) -> list[str]:
    """This checkout's interpreter under uid USER_UID, as an ordinary user would run it."""
    python = Path(sys.executable)
    inside = python.is_relative_to(REPO)
    python_arg = str(home / "repo" / python.relative_to(REPO)) if inside else sys.executable
    env = ["env", f"HOME={home}", "PYTHONDONTWRITEBYTECODE=1", f"PYTHONPATH={home}/repo"]
    env += [f"{PARENT_ENV}={CANARY}"]
    drop = ["setpriv", f"--reuid={USER_UID}", f"--regid={USER_UID}", "--clear-groups"]
    base = os.path.realpath(sys.base_prefix)
    return ["unshare", "--mount", "sh", "-c", _AS_USER, str(REPO), base, str(home)] + [
        *drop,
        *env,
        python_arg,
        "-c",
        USER_SCRIPT,
    ]


def test_as_an_ordinary_user_no_canary_is_reached(canaries: Canaries) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to start a process under another uid (CI runs as root)")
    if shutil.which("setpriv") is None or shutil.which("unshare") is None:
        pytest.skip("util-linux's setpriv and unshare are needed to switch users")
    home = Path(tempfile.mkdtemp(prefix="ds-redteam-user-"))
    try:
        home.chmod(0o755)
        folder = home / "home"
        plant(folder, USER_UID)
        user = Canaries(folder, canaries.server, canaries.mark)
        cfg = {"code": batch_code(), "attacks": BATCH, "names": user.names()}
        done = subprocess.run(
            _as_user_command(home),
            input=json.dumps(cfg),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        report = json.loads(done.stdout)
        assert report["uid"] == USER_UID and report["usable"], report["reason"]
        for out in report["outs"]:
            assert out["result"] is not None, out["error"]
            assert set(json.loads(out["result"])["outcomes"]) == set(BATCH)
            user.assert_untouched(out["stdout"], out["stderr"], out["result"], done.stderr)
    finally:
        shutil.rmtree(home, ignore_errors=True)


# --- a kill -9 of the parent ---------------------------------------------------------------

PARENT_SCRIPT = """
import asyncio
from deepsearch.sandbox.runner import Sandbox, SandboxLimits
box = Sandbox(SandboxLimits(cpu_s=30, wall_s=60))
asyncio.run(box.run('import time\\ntime.sleep(60)', {}))
"""


def _processes_mentioning(marker: str) -> dict[int, int]:
    """pid -> process group of every process whose command line mentions ``marker``."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace"):
                found[int(pid)] = os.getpgid(int(pid))
        except OSError:
            continue
    return found


def _group_alive(pgid: int) -> bool:
    """True while the group holds a process that has not exited.

    A zombie has exited: it only waits for its reaper, here the container's init, which
    may take a second or more to collect it. A group the kernel still knows but whose
    members /proc does not show counts as alive.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    states = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            states.append(fields[0])
    return not states or any(state != "Z" for state in states)


def test_no_sandbox_process_outlives_a_killed_parent(tmp_path: Path) -> None:
    marker = str(tmp_path)  # the sandbox's directories are made under it (TMPDIR)
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT_SCRIPT],
        env={**os.environ, "TMPDIR": marker},
        cwd=Path.cwd(),
    )
    try:
        # Generous: the loop ends as soon as the run shows; a loaded machine took over
        # 20 s to start the parent and its nice'd sandbox.
        deadline, groups = time.monotonic() + 60, set[int]()
        while not groups and time.monotonic() < deadline:  # the run has started
            groups = set(_processes_mentioning(marker).values()) - {os.getpgid(parent.pid)}
            time.sleep(0.05)
        assert groups, "the sandbox never started"
        assert all(_group_alive(g) for g in groups)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 5
        while any(_group_alive(g) for g in groups) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not any(_group_alive(g) for g in groups), "sandbox processes outlived the parent"
    finally:
        parent.kill()
        parent.wait()
