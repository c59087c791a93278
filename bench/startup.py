"""Start-up benchmark: `deepsearch --help` against `python -c "import typer, rich"`.

Both run as fresh interpreters, alternated so machine noise hits both alike; the
figure is the ratio of medians (target ≤ 1.5×: nothing heavy imported at start-up).
Over target, the `-X importtime` top offenders are listed.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 11
TARGET = 1.5
HEAVY = ("openai", "google.genai", "httpx", "httpx2", "tiktoken", "trafilatura")


def _cli_command() -> list[str]:
    script = Path(sys.executable).parent / "deepsearch"
    return (
        [str(script), "--help"]
        if script.exists()
        else [sys.executable, "-m", "deepsearch", "--help"]
    )


def _time_once(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
    )
    return time.perf_counter() - started


_HELP_CODE = (
    "import sys\n"
    "sys.argv = ['deepsearch', '--help']\n"
    "from deepsearch.cli import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
)


def _importtime_offenders(env: dict[str, str], top: int = 10) -> list[tuple[int, str]]:
    """Top-level imports of `--help` by cumulative microseconds."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _HELP_CODE],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    rows: list[tuple[int, str]] = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2]
        if len(name) - len(name.lstrip()) == 1:  # top level, not a nested import
            rows.append((int(parts[1]), name.strip()))
    return sorted(rows, reverse=True)[:top]


def _heavy_loaded(env: dict[str, str]) -> list[str]:
    code = _HELP_CODE + f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True
    )
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return [m for m in last.split(",") if m in HEAVY]


def run() -> str:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    cli = _cli_command()
    baseline = [sys.executable, "-c", "import typer, rich"]
    # warm the file cache once each, then alternate
    _time_once(cli, env)
    _time_once(baseline, env)
    cli_times: list[float] = []
    base_times: list[float] = []
    for _ in range(RUNS):
        cli_times.append(_time_once(cli, env))
        base_times.append(_time_once(baseline, env))
    cli_ms = statistics.median(cli_times) * 1000
    base_ms = statistics.median(base_times) * 1000
    ratio = cli_ms / base_ms
    heavy = _heavy_loaded(env)
    verdict = "met" if ratio <= TARGET else "NOT met"
    lines = [
        "## Start-up",
        "",
        "Command: `.venv/bin/python -m bench startup`. Wall time of `deepsearch --help` against "
        f'`python -c "import typer, rich"`, fresh interpreters, alternated, median of {RUNS} '
        "runs each after one warm-up.",
        "",
        "| command | median ms | min ms | max ms |",
        "|---|---:|---:|---:|",
        f"| `deepsearch --help` | {cli_ms:.0f} | {min(cli_times) * 1000:.0f} | {max(cli_times) * 1000:.0f} |",
        f'| `python -c "import typer, rich"` | {base_ms:.0f} | {min(base_times) * 1000:.0f} | '
        f"{max(base_times) * 1000:.0f} |",
        "",
        f"Ratio of medians: **{ratio:.2f}×** (target ≤ {TARGET}×: **{verdict}**). "
        f"Heavy modules imported by `--help`: {', '.join(heavy) if heavy else 'none'} "
        f"(checked: {', '.join(HEAVY)}).",
    ]
    if ratio > TARGET:
        lines += ["", "Top cumulative imports (`-X importtime`, µs):", ""]
        lines += [f"- `{name}`: {us}" for us, name in _importtime_offenders(env)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
