"""Against real local OpenAI-compatible servers (issue 17, item 7): what each output-mode
rung did, and how whole questions ended.

Runs N HotpotQA questions (default 3) through the real CLI (`deepsearch Q --json`) with
the LLM at a server you give (llama.cpp's `llama-server`, llama-cpp-python's server,
vLLM, LM Studio, Ollama's /v1...), and the web at loopback fakes: a SearXNG-like search
and the corpus as article pages (bench/latency_servers.py, without simulated latency).
A relay in front of the server (bench/local_relay.py) counts, per rung, the requests,
the HTTP statuses, the 200 replies that parsed as JSON and matched the schema sent, and
completion tokens against `max_tokens`.

Nothing here starts a server or runs in `make test`; with no server given it skips:
`python -m bench local_servers` keeps the recorded bench/results/local_servers.md
unless DEEPSEARCH_BENCH_LOCAL_SERVERS="label=BASE_URL@MODEL;..." names servers.

Reproduce one server: `.venv/bin/python -m bench.local_servers --base-url
http://127.0.0.1:8081/v1 --model gemma3-270m --label llama-server`
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from bench.latency import _env, _parse, two_hop_items
from bench.latency_policy import Item, contains_answer
from bench.latency_servers import FakeArticleSite, FakeSearxng, Timeline
from bench.local_relay import Call, Relay

RESULTS = Path(__file__).resolve().parent / "results" / "local_servers.md"
# ../shared/data next to the checkout, or next to the folder of git worktrees.
DATA = next(
    (p / "shared" / "data" / "hotpotqa100" for p in Path(__file__).resolve().parents[2:4]
     if (p / "shared" / "data" / "hotpotqa100").is_dir()),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa100",
)  # fmt: skip
ENV_SERVERS = "DEEPSEARCH_BENCH_LOCAL_SERVERS"
QUESTIONS = 3
TIMEOUT_S = 170.0  # deepsearch's own --timeout: a run ends near 3 minutes
GRACE_S = 90.0  # then the harness kills a run that did not end by itself


@dataclass
class Run:
    question: str
    status: str
    exit_code: int | str
    answer: str
    correct: bool
    steps: int
    tokens: int
    wall_s: float
    calls: list[Call] = field(default_factory=list)


def command(question: str, model: str, searxng: str, timeout_s: float) -> list[str]:
    script = Path(sys.executable).parent / "deepsearch"
    head = [str(script)] if script.exists() else [sys.executable, "-m", "deepsearch"]
    return [
        *head,
        question,
        "--json",
        "--quiet",
        "--llm-provider",
        "openai",
        "--model",
        model,
        "--search-provider",
        "searxng",
        "--searxng-url",
        searxng,
        "--allow-private-urls",
        "--no-cache",
        "--timeout",
        f"{timeout_s:g}",
    ]


def run_one(item: Item, relay: Relay, base_path: str, argv: list[str], timeout_s: float) -> Run:
    relay.take()
    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        env = _env(relay.origin + base_path, Path(tmp))
        started = time.perf_counter()
        try:
            done = subprocess.run(
                argv, env=env, cwd=tmp, capture_output=True, text=True,
                timeout=timeout_s + GRACE_S, check=False,
            )  # fmt: skip
            out, code = _parse(done.stdout, done.stderr), done.returncode
        except subprocess.TimeoutExpired:
            out, code = {"status": "killed"}, f"killed after {timeout_s + GRACE_S:.0f} s"
        wall = time.perf_counter() - started
    answer = " ".join(str(out.get("answer") or "").split())
    status = str(out.get("status", "?"))
    return Run(
        question=item.question,
        status=status,
        exit_code=code,
        answer=answer,
        correct=status == "answered" and contains_answer(answer, item.answer),
        steps=len(out.get("steps") or []),
        tokens=int((out.get("usage") or {}).get("total_tokens") or 0),
        wall_s=wall,
        calls=relay.take(),
    )


def measure(base_url: str, model: str, n: int, timeout_s: float) -> list[Run]:
    items, site = two_hop_items(DATA, n)
    parts = urlsplit(base_url)
    origin, base_path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    timeline = Timeline()
    with (
        FakeArticleSite(timeline, site, scale=0.0) as pages,
        FakeSearxng(timeline, site, pages.url, scale=0.0) as search,
        Relay(origin) as relay,
    ):
        runs = []
        for item in items:
            argv = command(item.question, model, search.url, timeout_s)
            runs.append(run_one(item, relay, base_path, argv, timeout_s))
            r = runs[-1]
            print(
                f"   {r.status:10} exit {r.exit_code} {r.wall_s:6.1f}s steps {r.steps} "
                f"calls {len(r.calls)} answer {r.answer[:60]!r}",
                file=sys.stderr,
                flush=True,
            )
        return runs


def _cell(text: str, width: int = 70) -> str:
    text = text if len(text) <= width else text[: width - 1] + "…"
    return text.replace("|", "\\|").replace("\n", " ") or "—"


def rung_table(calls: list[Call]) -> list[str]:
    lines = [
        "| rung | requests | HTTP status | 200 replies | parsed JSON | schema-valid "
        "| completion tokens (median / max) | max_tokens sent | ran to max_tokens |",
        "|---|---:|---|---:|---:|---:|---|---|---:|",
    ]
    for rung in sorted({c.rung for c in calls}):
        mine = [c for c in calls if c.rung == rung]
        ok = [c for c in mine if c.status == 200 and not c.error.startswith("client")]
        statuses = ", ".join(
            f"{s}×{k}" for s, k in sorted(Counter(map(str, (c.status for c in mine))).items())
        )
        used = [c.completion_tokens for c in ok if c.completion_tokens is not None]
        spread = f"{statistics.median(used):.0f} / {max(used)}" if used else "—"
        sent = ", ".join(sorted({str(c.max_tokens) for c in mine}))
        valid = sum(bool(c.valid) for c in ok)
        checked = sum(c.valid is not None for c in ok)
        lines.append(
            f"| {rung} | {len(mine)} | {statuses} | {len(ok)} | {sum(bool(c.parsed) for c in ok)} "
            f"| {valid}/{checked} | {spread} | {sent} | {sum(c.ran_to_max for c in mine)} |"
        )
    return lines


def errors_list(calls: list[Call]) -> list[str]:
    """Each distinct refusal or failure, once, with how often it happened."""
    seen = Counter((c.rung, str(c.status), _cell(c.error, 300)) for c in calls if c.error)
    return [f"- {rung}, {status} ×{k}: `{err}`" for (rung, status, err), k in sorted(seen.items())]


def run_table(runs: list[Run]) -> list[str]:
    lines = [
        "| # | status | exit | correct | steps | tokens | wall s | LLM calls | answer |",
        "|---:|---|---|---|---:|---:|---:|---:|---|",
    ]
    for i, r in enumerate(runs, 1):
        lines.append(
            f"| {i} | {r.status} | {r.exit_code} | {'yes' if r.correct else 'no'} | {r.steps} "
            f"| {r.tokens} | {r.wall_s:.1f} | {len(r.calls)} | {_cell(r.answer)} |"
        )
    return lines


def render(label: str, base_url: str, model: str, runs: list[Run], timeout_s: float) -> str:
    calls = [c for r in runs for c in r.calls]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    body = [
        f"### {label}",
        "",
        f"`{base_url}`, model `{model}`; {len(runs)} questions, `--timeout {timeout_s:g}`; "
        f"load average {load} on {os.cpu_count()} cores.",
        "",
        "Runs:",
        "",
        *run_table(runs),
        "",
        "LLM calls by output-mode rung (all runs):",
        "",
        *rung_table(calls),
        "",
        "Refusals and failures (first 300 characters of the body, or the first schema error):",
        "",
        *(errors_list(calls) or ["- none"]),
    ]
    return "\n".join(body) + "\n"


def replace_block(text: str, label: str, block: str) -> str:
    """`text` with the figures of `label` between their markers replaced (or appended)."""
    begin, end = f"<!-- figures:{label} -->", f"<!-- /figures:{label} -->"
    new = f"{begin}\n{block.strip()}\n{end}"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    return (
        pattern.sub(lambda _m: new, text)
        if pattern.search(text)
        else text.rstrip() + "\n\n" + new + "\n"
    )


def _servers(spec: str) -> list[tuple[str, str, str]]:
    out = []
    for entry in filter(None, (e.strip() for e in spec.split(";"))):
        label, _, rest = entry.partition("=")
        url, _, model = rest.rpartition("@")
        out.append((label, url, model))
    return out


def run() -> str:
    """For `python -m bench`: figures need a live server, so without one keep the file."""
    recorded = RESULTS.read_text("utf-8") if RESULTS.is_file() else ""
    spec = os.environ.get(ENV_SERVERS, "")
    if not spec or not DATA.is_dir():
        print(f"   skipped: no server given ({ENV_SERVERS} unset)", file=sys.stderr)
        return recorded or "## Real local servers\n\nSkipped: no server given.\n"
    for label, url, model in _servers(spec):
        recorded = replace_block(
            recorded,
            label,
            render(label, url, model, measure(url, model, QUESTIONS, TIMEOUT_S), TIMEOUT_S),
        )
    return recorded


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.local_servers", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--base-url", help="the server's OpenAI base URL, e.g. http://127.0.0.1:8081/v1"
    )
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--label", default="server")
    parser.add_argument("--questions", type=int, default=QUESTIONS)
    parser.add_argument(
        "--timeout", type=float, default=TIMEOUT_S, help="deepsearch --timeout per run"
    )
    parser.add_argument(
        "--write", action="store_true", help=f"also put the figures into {RESULTS.name}"
    )
    parser.add_argument("--raw", type=Path, help="also write every run and call as JSON here")
    args = parser.parse_args(argv)
    if not args.base_url:
        print("skipped: no server given (--base-url)", file=sys.stderr)
        return 0
    if not DATA.is_dir():
        print(f"skipped: {DATA} is not present", file=sys.stderr)
        return 0
    runs = measure(args.base_url, args.model, args.questions, args.timeout)
    section = render(args.label, args.base_url, args.model, runs, args.timeout)
    print(section)
    if args.write:
        recorded = RESULTS.read_text("utf-8") if RESULTS.is_file() else "## Real local servers\n"
        RESULTS.write_text(replace_block(recorded, args.label, section), encoding="utf-8")
    if args.raw:
        args.raw.write_text(json.dumps([asdict(r) for r in runs], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
