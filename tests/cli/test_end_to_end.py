"""The `deepsearch` command, end to end, over loopback only:

- the real `openai` SDK against a fake OpenAI-compatible server (routed by schema),
- SearXNG-shaped search results pointing at
- loopback pages built from a few HotpotQA paragraphs (tests/fixtures/hotpot_mini.json),

asserting on the `--json` output, exit codes, citations, the trace and Ctrl-C.

Two golden paths run in a subprocess: a cited answer with `--json` and `--trace` (in a
fresh interpreter, `cli.run` as the console script calls it, which also reports the
modules it loaded: a research run imports no `openai` module, issue 21; and what it held
when its first request left: tests/test_first_request.py's facts), and Ctrl-C
(the installed script). Everything else runs the same `cli.run` in process
(tests/cli/inprocess.py), which is what keeps the suite fast.
"""

from __future__ import annotations

import html
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.inprocess import Outcome, run_cli_in_process
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.ports import refused_port
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.steps import StepScript
from tests.fakes.web_server import LoopbackServer, _text
from tests.test_first_request import check_first_request

FIXTURE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "hotpot_mini.json").read_text("utf-8")
)
QUESTION = FIXTURE["question"]
SECRET = "sk-e2e-secret-value-0123456789"
DEEPSEARCH = Path(sys.executable).parent / "deepsearch"

ANSWER = (
    # "[^1][^2]": markers the LLM wrote itself, which the run must replace by its own.
    "The film was Maximum Overdrive, which was shot in and around Leland, North Carolina.[^1][^2] "
    "Maximum Overdrive is a 1986 American science fiction horror comedy film written and "
    "directed by Stephen King. So the director was Stephen King."
)


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def page_html(title: str, text: str) -> bytes:
    body = (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}"
        f"</title></head><body><nav>Home | Random</nav><article><h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(text)}</p></article><footer>Footer text</footer></body></html>"
    )
    return body.encode("utf-8")


@pytest.fixture
def web() -> Iterator[LoopbackServer]:
    routes = {
        f"/wiki/{slug(t)}": _text(page_html(t, p), "text/html; charset=utf-8")
        for t, p in FIXTURE["paragraphs"].items()
    }
    with LoopbackServer(routes=routes) as server:
        yield server


@pytest.fixture
def search(web: LoopbackServer) -> Iterator[FakeSearchServers]:
    results = [
        {"title": t, "url": web.url(f"/wiki/{slug(t)}"), "content": p.split(". ")[0] + "."}
        for t, p in FIXTURE["paragraphs"].items()
    ]
    # Gold paragraphs first, as a good engine would rank them.
    results.sort(key=lambda r: r["title"] not in FIXTURE["gold"])
    with FakeSearchServers() as srv:
        srv.always("searxng", 200, {"results": results})
        yield srv


def schema_name(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name")


Router = Callable[[dict[str, Any]], Any]


def router(steps: list[Any], *, strict_pass: bool = True) -> Router:
    """Agent steps in order, each once (a strict `StepScript`, checked when the test
    ends: end the list with `forever(step)` for a step that repeats); every evaluator
    passes (or strict fails)."""
    return _route(StepScript(steps).next, strict_pass=strict_pass)


def _route(next_step: Callable[[], Any], *, strict_pass: bool) -> Router:
    def route(body: dict[str, Any]) -> Any:
        name = schema_name(body)
        if name == "QuestionEval":
            return {
                "think": "a fact",
                "needs_definitive": True,
                "needs_freshness": False,
                "needs_plurality": False,
                "needs_completeness": False,
            }
        if name == "AgentStep":
            return next_step()
        if name == "StrictEval":
            return {"think": "checked", "pass": strict_pass, "improvement_plan": "More."}
        if name in ("DefinitiveEval", "CompletenessEval"):
            return {"think": "ok", "pass": True}
        if name == "RewriteReply":
            return {"think": "", "queries": []}
        if name == "ErrorAnalysis":
            return {"recap": "r", "blame": "b", "improvement": "i"}
        if name is None:  # the finalizer's free text: keep the answer as it is
            return body["messages"][-1]["content"]
        raise AssertionError(f"unexpected schema {name}")

    return route


SEARCH = {
    "think": "find the films",
    "action": {"search": {"queries": ["films shot in Leland North Carolina 1986"]}},
}
VISIT = {"think": "read both", "action": {"visit": {"url_indices": [1, 2]}}}
ANSWER_STEP = {"think": "enough", "action": {"answer": {"answer": ANSWER}}}


# The console script's `main` (deepsearch/entry.py), with an audit hook that reports what
# the process holds at its first outside connection ("FIRST_CONNECT=", the facts
# tests/test_first_request.py checks), its exit swapped for one that first
# names the loaded modules of each package a research run must not import (issue 21):
# no `openai` (chat goes over httpx, `llm/openai_wire.py`; the SDK's import alone cost
# about a second of CPU a run) and, with `--json` and stderr a pipe, no rich, markdown-it,
# pygments or click (nothing is drawn: the live view writes its lines as they are,
# frontend/live.py; httpx's command-line tool, which imports them, is marked absent).
REPORTING_SCRIPT = """
import gc, json, os, sys, threading
first = threading.Lock()
def first_connect(event, args):  # what the process holds when its first request leaves
    if event == "socket.connect" and isinstance(args[1], tuple) and first.acquire(False):
        facts = {
            "address": list(args[1][:2]),
            "modules": sorted(m for m, v in sys.modules.items() if v is not None),
            "threads": [t.name for t in threading.enumerate()],
        }
        print("FIRST_CONNECT=" + json.dumps(facts), file=sys.stderr, flush=True)
sys.addaudithook(first_connect)
from deepsearch import entry
START_GC = gc.get_threshold()
def report(code):
    for package in NOT_IMPORTED:
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == package)
        print(package.upper() + "_MODULES=" + ",".join(loaded), file=sys.stderr)
    restored = gc.get_threshold() == START_GC
    print(f"GC_MODULES=restored={restored} frozen={gc.get_freeze_count() > 0}", file=sys.stderr)
    sys.stdout.flush(); sys.stderr.flush()
    os._exit(code)
entry.exit_now = report
entry.main()
"""
NOT_IMPORTED = ("openai", "rich", "markdown_it", "pygments", "click")
# Variables that make rich see a terminal in a pipe (the view then draws with rich).
RICH_TERMINAL = {"FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"}


def loaded_modules(stderr: str, package: str) -> str:
    """What the reporting script said `package` left in sys.modules ("" for none)."""
    (line,) = [x for x in stderr.splitlines() if x.startswith(f"{package.upper()}_MODULES=")]
    return line.partition("=")[2]


def run_cli(
    llm: FakeOpenAIServer, search: FakeSearchServers, *extra: str, tmp: Path, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """The command line in a fresh interpreter; its stderr ends with the modules it
    loaded of each NOT_IMPORTED package (`loaded_modules`) and, as package "gc", the
    collector's state at the exit."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            f"NOT_IMPORTED = {NOT_IMPORTED!r}" + REPORTING_SCRIPT,
            QUESTION,
            *cli_args(search),
            *extra,
        ],
        env={k: v for k, v in cli_env(llm, tmp).items() if k not in RICH_TERMINAL},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_in_process(
    llm: FakeOpenAIServer, search: FakeSearchServers | None, *extra: str, tmp: Path
) -> Outcome:
    """The same command line as `run_cli`, through `cli.run` in this process."""
    flags = cli_args(search) if search is not None else []
    return run_cli_in_process(QUESTION, *flags, *extra, env=cli_env(llm, tmp))


def cli_args(search: FakeSearchServers) -> list[str]:
    return [
        "--json",
        "--llm-provider",
        "openai",
        "--search-provider",
        "searxng",
        "--searxng-url",
        search.base_url("searxng"),
        "--allow-private-urls",
        "--no-cache",
        "--budget",
        "200000",
    ]


def cli_env(llm: FakeOpenAIServer, tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_API_KEY": SECRET,
        "OPENAI_BASE_URL": llm.base_url,
        "HOME": str(tmp),
        "DEEPSEARCH_CACHE_DIR": str(tmp / "cache"),
        "NO_COLOR": "1",
    }


def normalized(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.timeout(120)
def test_answer_with_verified_citations(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        done = run_cli(llm, search, "--trace", str(trace), tmp=tmp_path)
        llm_url = llm.url
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1, "stdout must hold exactly one JSON object"
    out = json.loads(done.stdout)
    assert out["schema_version"] == "2"
    assert 0 < out["confidence"] <= 1 and out["confidence_basis"]["checks"] == "passed"
    assert out["status"] == "answered"
    assert out["question"] == QUESTION
    assert "Stephen King" in out["answer"]
    assert [s["action"] for s in out["steps"]] == ["search", "visit", "answer"]
    # the two picks, topped up by rank to five: all four pages of this small web
    assert len(out["read_urls"]) == 4 and set(out["read_urls"]) <= set(out["visited_urls"])
    usage = out["usage"]
    assert 0 < usage["total_tokens"] <= usage["budget"] == 200_000
    assert {"agent", "evaluator"} <= set(usage["by_tool"])

    # Every citation is a verbatim quote from the page of its own URL.
    by_url = {web.url(f"/wiki/{slug(t)}"): normalized(p) for t, p in FIXTURE["paragraphs"].items()}
    refs = out["references"]
    assert refs, "the answer restates page sentences: it must be cited"
    for ref in refs:
        assert ref["url"] in by_url, ref
        assert normalized(ref["quote"]) in by_url[ref["url"]], ref
    # The LLM's own "[^1][^2]" are gone: markers are exactly 1..n, one definition each.
    body, _, definitions = out["answer"].partition('\n\n[^1]: "')
    markers = [int(n) for n in re.findall(r"\[\^(\d+)\](?!:)", body)]
    assert markers == list(range(1, len(refs) + 1)), out["answer"]
    defined = re.findall(r"^\[\^(\d+)\]:", "[^1]: " + definitions, re.MULTILINE)
    assert [int(n) for n in defined] == list(range(1, len(refs) + 1)), out["answer"]
    assert web.requests, "the reader fetched the pages over loopback"

    # The trace has LLM and web calls and never the key.
    lines = [json.loads(line) for line in trace.read_text("utf-8").splitlines()]
    kinds = {line["kind"] for line in lines}
    assert {"llm_request", "llm_response", "search", "read"} <= kinds
    assert SECRET not in trace.read_text("utf-8")
    assert SECRET not in done.stdout + done.stderr

    # A --json research run against an OpenAI-compatible server imports neither the
    # openai SDK nor rich and what rich brings (REPORTING_SCRIPT).
    for package in NOT_IMPORTED:
        assert loaded_modules(done.stderr, package) == "", f"a run imported {package}"
    # The start-up's rare collections ended once the run was built (deepsearch/collector):
    # its objects frozen, the interpreter's thresholds back for the run itself.
    assert loaded_modules(done.stderr, "gc") == "restored=True frozen=True"
    # The first request left before what later steps need was imported (issue 21).
    [first] = [x for x in done.stderr.splitlines() if x.startswith("FIRST_CONNECT=")]
    check_first_request(json.loads(first.partition("=")[2]), llm_url=llm_url)


def test_step_limit_forces_beast_mode_exit_3(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        done = run_in_process(llm, search, "--max-steps", "2", "--quiet", tmp=tmp_path)
    assert done.returncode == 3, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "forced"
    assert [s["action"] for s in out["steps"]] == ["search", "visit", "answer"]
    assert "Stephen King" in out["answer"]
    assert done.stderr == "", "--quiet keeps stderr silent"


def test_plain_output_is_markdown_and_view_goes_to_stderr(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    args = [a for a in cli_args(search) if a != "--json"]
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        done = run_in_process(llm, None, *args, tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("The film was Maximum Overdrive")
    assert "[^1]:" in done.stdout
    assert "search" in done.stderr and "visit" in done.stderr and "answered" in done.stderr
    assert "Traceback" not in done.stderr


def agent_steps_seen(llm: FakeOpenAIServer) -> int:
    return sum(schema_name(r.body) == "AgentStep" for r in llm.chat_requests)


def wait_until(condition: Callable[[], bool], *, alive: Callable[[], bool], what: str) -> None:
    """Poll a condition the fakes record (no fixed sleep): under load it just takes
    longer, it never races."""
    deadline = time.monotonic() + 60
    while not condition():
        assert alive(), f"the command ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.timeout(120)
def test_ctrl_c_prints_the_partial_result_and_exits_130(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    """Golden path 2: a real SIGINT to the installed script, as a terminal sends it."""
    stall = Reply(content=json.dumps(ANSWER_STEP), delay_s=60)
    with FakeOpenAIServer(router([SEARCH, stall])) as llm:
        proc = subprocess.Popen(
            [str(DEEPSEARCH), QUESTION, *cli_args(search)],
            env=cli_env(llm, tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until(
                lambda: agent_steps_seen(llm) >= 2,
                alive=lambda: proc.poll() is None,
                what="the second agent step",
            )
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, stderr
    out = json.loads(stdout)
    assert out["status"] == "interrupted"
    assert [s["action"] for s in out["steps"]] == ["search"]
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("signum", "code"),
    [(signal.SIGTERM, 143), (signal.SIGHUP, 129)],
    ids=["sigterm", "sighup"],
)
def test_a_signal_prints_the_partial_result_and_exits_128_plus_n(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path, signum: int, code: int
) -> None:
    """In process: the signal comes from a thread once the second agent step is in
    flight; the handlers `cli.run` installs turn it into the same unwinding."""
    stall = Reply(content=json.dumps(ANSWER_STEP), delay_s=60)
    running = threading.Event()

    def send_signal_when_stalled() -> None:
        wait_until(lambda: agent_steps_seen(llm) >= 2, alive=running.is_set, what="step 2")
        os.kill(os.getpid(), signum)

    with FakeOpenAIServer(router([SEARCH, stall])) as llm:
        sender = threading.Thread(target=send_signal_when_stalled, daemon=True)
        running.set()
        sender.start()
        try:
            done = run_in_process(llm, search, tmp=tmp_path)
        finally:
            running.clear()
            sender.join(timeout=5)
    assert done.returncode == code, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "interrupted"
    assert [s["action"] for s in out["steps"]] == ["search"]
    assert "Traceback" not in done.stderr


def test_bad_flag_value_is_one_line_exit_2(tmp_path: Path) -> None:
    done = run_cli_in_process("q?", "--effort", "extreme", env={"HOME": str(tmp_path)})
    assert done.returncode == 2
    assert "effort" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


def test_no_provider_is_a_clear_config_error(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "DEEPSEARCH_CONFIG": str(_closed_ollama(tmp_path))}
    done = run_cli_in_process("q?", "--json", env=env)
    assert done.returncode == 2, done.stderr
    assert "GEMINI_API_KEY" in done.stderr and "OPENAI_API_KEY" in done.stderr
    assert "Traceback" not in done.stderr


def _closed_ollama(tmp: Path) -> Path:
    # A port this process holds bound, never listening: not a port found free and
    # released, which another worker's server could be given meanwhile (it was).
    port = refused_port()
    path = tmp / "config.json"
    path.write_text(json.dumps({"llm": {"ollama_url": f"http://127.0.0.1:{port}"}}), "utf-8")
    return path


def test_research_over_a_local_corpus_with_no_web(tmp_path: Path) -> None:
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for title, text in FIXTURE["paragraphs"].items():
        (corpus / f"{slug(title)}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    steps = [
        {"think": "", "action": {"search": {"queries": ["Leland North Carolina films"]}}},
        VISIT,
        ANSWER_STEP,
    ]
    with FakeOpenAIServer(router(steps)) as llm:
        flags = ["--json", "--llm-provider", "openai", "--corpus", str(corpus), "--no-cache"]
        done = run_in_process(llm, None, *flags, tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["read_urls"] and all(u.startswith("file://") for u in out["read_urls"])
    files = {f"file://{p}": normalized(p.read_text("utf-8")) for p in corpus.iterdir()}
    assert out["references"]
    for ref in out["references"]:
        assert normalized(ref["quote"]) in files[ref["url"]]


def test_rejected_key_is_a_configuration_error_exit_2(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    with FakeOpenAIServer(router([]), api_key="the-right-key") as llm:  # the key is refused first
        done = run_in_process(llm, search, tmp=tmp_path)
    assert done.returncode == 2, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "failed" and out["answer"] == ""
    assert "OPENAI_API_KEY" in out["error"] and SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_a_dead_llm_endpoint_fails_fast_without_beast_mode(
    search: FakeSearchServers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deepsearch.llm import openai_wire

    # The wire still retries every refused connection, with its backoff scaled from
    # 0.5 s (doubling) to 5 ms: ~3.5 s of sleeping said nothing the retries do not.
    monkeypatch.setattr(openai_wire, "INITIAL_RETRY_DELAY_S", 0.005)

    # A port this process holds bound, never listening: not a port found free and
    # released, which another worker's server could be given meanwhile (it was).
    port = refused_port()
    env = {
        "OPENAI_API_KEY": SECRET,
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "DEEPSEARCH_CACHE_DIR": str(tmp_path / "cache"),
    }
    args = [a for a in cli_args(search) if a != "--json"]
    done = run_cli_in_process(QUESTION, *args, env=env)
    assert done.returncode == 1, done.stderr
    assert "Beast Mode" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""  # no answer: nothing on stdout, the reason on stderr


def test_short_help_flag_and_root_options_do_not_become_questions(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    short = run_cli_in_process("-h", env=env)
    assert short.returncode == 0 and "research" in short.stdout
    odd = run_cli_in_process("--config", str(tmp_path / "x.json"), "config", env=env)
    assert (
        odd.returncode == 2 and "Traceback" not in odd.stderr
    )  # a usage error, not a research run
