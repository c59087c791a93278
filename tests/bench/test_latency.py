"""The wall-time benchmark's instrument (bench/latency*.py) must not rot silently:
one whole question through the real CLI with the policy LLM (latency scaled to 0),
and the pieces it rests on — the policy's decisions, schema-valid replies, the
latency model, the critical-path arithmetic, the prompt composition and the pages.

The whole question runs the command line `Bench` builds through `cli.run` in this
process (tests/cli/inprocess.py), with the environment `Bench` gives it: the same
flags, servers, JSON and figures, without a fresh interpreter's ~0.5 s of CPU. How
`run_child` measures a process (its CPU, wall time and exit tail) is checked on a
small child of its own below; `make bench` runs every question as a process."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bench import latency
from bench.latency import Bench, Child, Figures, _figures, measure
from bench.latency_measure import PARTS, composition, llm_rounds, total_composition, union_s
from bench.latency_policy import NOT_FOUND, Item, Policy, allowed_actions, minimal
from bench.latency_report import render
from bench.latency_servers import FakeLLMServer, FakeSearxng, Timeline, Wait
from bench.latency_site import Site, wiki_path
from deepsearch.agent.judging.evaluator import QuestionEval, StrictEval
from deepsearch.agent.retrieval.rewrite import RewriteReply
from deepsearch.agent.schema import step_schema

FIXTURE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "hotpot_mini.json").read_text("utf-8")
)
SITE = Site(FIXTURE["paragraphs"])
FIRST, SECOND = FIXTURE["gold"]  # Leland, North Carolina -> Maximum Overdrive
ITEM = Item(
    question=FIXTURE["question"],
    answer=FIXTURE["answer"],
    gold=[FIRST, SECOND],
    facts=[FIXTURE["paragraphs"][SECOND].split(". ")[0] + "."],
)
BASE = "http://127.0.0.1:8000"


def url(title: str) -> str:
    return BASE + wiki_path(title)


def agent_prompt(*, listed: list[str], read: list[str], queries: list[str]) -> str:
    """An agent prompt in the shape deepsearch renders (agent/context.py)."""
    knowledge = "\n\n".join(
        f'<knowledge-{i} type="url" (updated 2025-03-03)>\nQ: What does "{t} - Open '
        f'Encyclopedia" say about: q\nA: text linking [x]({url(SECOND)})\nsources: {url(t)}\n'
        f"</knowledge-{i}>"
        for i, t in enumerate(read, start=1)
    )
    urls = "\n".join(
        f"[{i}] (score 0.50) {url(t)}\n    {t}: snippet" for i, t in enumerate(listed, start=1)
    )
    done = f"<queries-done>\n{'; '.join(queries)}\n</queries-done>" if queries else ""
    return (
        f"<context>\n<original-question>\n{ITEM.question}\n</original-question>\n\n"
        f"<knowledge>\n{knowledge}\n</knowledge>\n\n{done}\n</context>\n"
        f"<action-visit>\nvisit: read\n{urls}\n</action-visit>"
    )


def decide(prompt: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    policy = Policy(item=ITEM)
    schema = step_schema(allowed).model_json_schema()  # type: ignore[arg-type]
    body = {
        "messages": [{"role": "system", "content": prompt}, {"role": "user", "content": "go"}],
        "response_format": {"type": "json_schema", "json_schema": {"schema": schema}},
    }
    reply = json.loads(policy(body))
    step_schema(allowed).model_validate(reply)  # type: ignore[arg-type]
    return reply


ALL = ("search", "visit", "reflect", "answer", "coding")


def test_policy_searches_the_question_first() -> None:
    reply = decide(agent_prompt(listed=[], read=[], queries=[]), ALL)
    assert list(reply["action"]) == ["search"]
    assert reply["action"]["search"]["queries"] == [ITEM.question]


def test_policy_visits_only_the_gold_pages_it_is_shown() -> None:
    listed = ["Terry Sanford", SECOND, "Some Page", FIRST]
    reply = decide(agent_prompt(listed=listed, read=[], queries=[ITEM.question]), ALL)
    assert list(reply["action"]) == ["visit"]
    assert reply["action"]["visit"]["url_indices"] == [4, 2]


def test_policy_searches_the_bridge_entity_once_the_first_hop_is_read() -> None:
    # The first hop's text links to the second page, but it is not in the list.
    prompt = agent_prompt(listed=["Terry Sanford"], read=[FIRST], queries=[ITEM.question])
    reply = decide(prompt, ALL)
    assert list(reply["action"]) == ["search"]
    assert reply["action"]["search"]["queries"] == [SECOND]


def test_policy_answers_with_quotes_once_both_pages_are_read() -> None:
    prompt = agent_prompt(listed=[], read=[FIRST, SECOND], queries=[ITEM.question])
    reply = decide(prompt, ALL)
    assert list(reply["action"]) == ["answer"]
    assert ITEM.facts[0] in reply["action"]["answer"]["answer"]
    assert ITEM.answer in reply["action"]["answer"]["answer"]


def test_policy_stuck_without_search_reflects_once_then_gives_up() -> None:
    prompt = agent_prompt(listed=[], read=[FIRST], queries=[ITEM.question])
    reply = decide(prompt, ("reflect", "answer"))
    assert list(reply["action"]) == ["reflect"]
    assert reply["action"]["reflect"]["questions"] == [f"What is {SECOND}?"]
    again = decide(prompt + f"\n<open-sub-questions>\n- What is {SECOND}?\n", ("reflect", "answer"))
    assert again["action"]["answer"]["answer"] == NOT_FOUND


def _ask(schema: type[BaseModel], user: str) -> dict[str, Any]:
    body = {
        "messages": [{"role": "user", "content": user}],
        "response_format": {"json_schema": {"schema": schema.model_json_schema()}},
    }
    reply = json.loads(Policy(item=ITEM)(body))
    schema.model_validate(reply)
    return reply


def test_evaluator_passes_only_answers_containing_the_gold_answer() -> None:
    good = _ask(StrictEval, "<question>q</question>\n<answer>\nIt was Stephen King.\n</answer>")
    bad = _ask(StrictEval, "<question>Stephen King?</question>\n<answer>\nNobody.\n</answer>")
    assert good["pass"] is True and bad["pass"] is False
    assert _ask(QuestionEval, ITEM.question)["needs_definitive"] is True
    assert _ask(RewriteReply, "x")["queries"] == []


def test_allowed_actions_read_from_enum_const_or_ref() -> None:
    assert allowed_actions(step_schema(("search", "answer")).model_json_schema()) == [
        "search",
        "answer",
    ]
    assert allowed_actions(step_schema(("answer",)).model_json_schema()) == ["answer"]
    wire = {"properties": {"action": {"anyOf": [{"properties": {"visit": {}}}]}}}
    assert allowed_actions(wire) == ["visit"]


def test_minimal_fills_every_property_of_a_strict_schema() -> None:
    strict = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "b": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
            "c": {"$ref": "#/$defs/C"},
            "d": {"type": ["number", "null"]},
        },
        "required": ["a", "b", "c", "d"],
        "additionalProperties": False,
        "$defs": {"C": {"type": "object", "properties": {"e": {"enum": ["x", "y"]}}}},
    }
    assert minimal(strict, strict["$defs"]) == {"a": None, "b": [0], "c": {"e": "x"}, "d": None}


def test_latency_model_of_the_fakes() -> None:
    timeline = Timeline()
    llm = FakeLLMServer(timeline, lambda body: "word " * 50)
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
    answer, delay, _ = llm.handle("POST", "/v1/chat/completions", body)
    completion = json.loads(answer.body)["usage"]["completion_tokens"]
    assert completion >= 50
    assert delay == pytest.approx(0.6 + 0.008 * completion)
    search = FakeSearxng(timeline, SITE, BASE)
    delays = {search.handle("GET", f"/search?q=q{i}&format=json", b"")[1] for i in range(20)}
    assert all(0.4 <= d <= 0.9 for d in delays) and len(delays) > 10
    assert search.handle("GET", "/search?q=q1", b"")[1] in delays  # fixed per query
    hits = json.loads(search.handle("GET", "/search?q=Maximum+Overdrive", b"")[0].body)
    assert hits["results"][0]["url"] == url(SECOND)
    for server in (llm, search):
        server._server.server_close()


def test_critical_path_is_the_union_of_waits() -> None:
    waits = [
        Wait("llm", 0.0, 1.0),
        Wait("page", 0.5, 2.0),
        Wait("llm", 3.0, 4.0),
        Wait("llm", 3.5, 4.5),  # concurrent with the previous call: one round
        Wait("search", 6.0, 6.5),
    ]
    assert union_s(waits) == pytest.approx(2.0 + 1.5 + 0.5)
    assert llm_rounds(waits) == 2


def test_a_wait_lasts_its_scaled_delay_and_is_recorded() -> None:
    timeline = Timeline()
    llm = FakeLLMServer(timeline, lambda body: "word " * 50, scale=0.05)
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
    started = time.perf_counter()
    llm._serve("POST", "/v1/chat/completions", body)
    (wait,) = timeline.take()
    assert wait.kind == "llm" and wait.start >= started
    assert wait.end - wait.start >= 0.05 * (0.6 + 0.008 * 50) * 0.95
    assert timeline.take() == []
    llm._server.server_close()


def test_figures_of_a_run() -> None:
    waits = [Wait("llm", 10.0, 11.0), Wait("page", 10.5, 12.0), Wait("llm", 13.0, 14.0)]
    out = {
        "status": "answered",
        "answer": "So it was Stephen King.",
        "usage": {"total_tokens": 1234},
        "steps": [{"action": "search"}, {"action": "answer"}],
    }
    f = _figures(ITEM, out, 5.0, 9.0, waits)
    assert (f.critical_s, f.startup_s, f.llm_calls, f.llm_rounds) == (3.0, 1.0, 2, 2)
    assert f.llm_s == 2.0
    assert (f.tokens, f.pages, f.searches, f.correct) == (1234, 1, 0, True)
    assert f.overhead == pytest.approx(5.0 / 3.0)
    assert f.actions == ["search", "answer"]
    assert not _figures(ITEM, {**out, "status": "forced"}, 5.0, 9.0, waits).correct
    assert not _figures(ITEM, {**out, "answer": "Stephen"}, 5.0, 9.0, waits).correct


def test_composition_splits_the_prompt_into_its_parts() -> None:
    prompt = agent_prompt(listed=["A", "B"], read=[FIRST], queries=["q one"])
    prompt += '\n<knowledge-9 type="side-info">\nQ: s\nA: snippet words here\n</knowledge-9>'
    prompt += "\n<diary>\nStep 1: searched\n</diary>"
    parts = composition(prompt)
    assert set(parts) == set(PARTS)
    for part in ("page evidence", "search snippets", "diary", "URL list", "question and queries"):
        assert parts[part] > 0, part
    assert parts["other knowledge"] == 0
    assert parts["instructions"] > 0


def test_pages_are_link_dense_articles() -> None:
    page = Site({**FIXTURE["paragraphs"], **{f"T{i}": "x" for i in range(200)}})
    html = page.page(FIRST)
    assert len(re.findall(r"<a href=", html)) >= 110
    assert 'id="cookie-banner"' in html and 'class="navbox"' in html
    assert f'<a href="{wiki_path(SECOND)}"' in html  # the bridge, linked inline
    assert "Leland is a town in" in html


def cli_in_process(command: list[str], *, env: dict[str, str], cwd: str) -> Child:
    """`run_child` for the command line `Bench.command` built: the installed script's
    arguments through `cli.run` here, in `cwd`, with `env` overlaid (a Child as
    run_child makes it: this process's CPU, the wall time, no exit tail)."""
    from tests.cli.inprocess import run_cli_in_process

    assert command[0] == str(Path(sys.executable).parent / "deepsearch"), command
    here = os.getcwd()
    os.chdir(cwd)
    cpu, started = time.process_time(), time.perf_counter()
    try:
        done = run_cli_in_process(*command[1:], env=env)
    finally:
        os.chdir(here)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert done.returncode == 0, done.stderr
    return Child(done.stdout, done.stderr, started, wall, cpu, exit_tail_s=0.0)


def test_one_question_through_the_real_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    # No wall-time bound here (timing belongs to `make bench`): a 15 s bound flaked
    # under load (40 s alone at load 18); the suite's own timeout catches a hang.
    monkeypatch.setattr(latency, "run_child", cli_in_process)
    with Bench(SITE, scale=0.0) as bench:
        figures = bench.run(ITEM)
    assert figures.status == "answered" and figures.correct, figures
    assert figures.actions[:2] == ["search", "visit"] and figures.actions[-1] == "answer"
    assert figures.searches == 1 and figures.pages >= 2
    assert 1 <= figures.llm_rounds <= figures.llm_calls and figures.llm_calls >= 4
    assert 0 < figures.tokens < 50_000
    # Consistency that holds on any machine (how the times compare is `make bench`'s):
    # each figure is its arithmetic over the waits the servers recorded.
    waits = figures.waits
    assert waits and all(w.start <= w.end for w in waits)
    assert figures.critical_s == pytest.approx(union_s(waits))
    assert figures.llm_s == pytest.approx(union_s([w for w in waits if w.kind == "llm"]))
    assert figures.llm_s <= figures.critical_s + 1e-9  # a part of the critical path
    assert figures.llm_calls == sum(w.kind == "llm" for w in waits)
    assert figures.llm_rounds == llm_rounds(waits)
    assert (figures.searches, figures.pages) == (
        sum(w.kind == "search" for w in waits),
        sum(w.kind == "page" for w in waits),
    )
    assert figures.wall_s > 0 and figures.cpu_s > 0 and figures.startup_s >= 0
    assert figures.exit_tail_s >= 0 and figures.read >= 2
    assert 0 <= figures.unread <= figures.pages - figures.read
    parts = total_composition(figures.agent_prompts)
    assert parts["page evidence"] > 0 and parts["URL list"] > 0 and parts["instructions"] > 0
    report = render([figures], parts, len(figures.agent_prompts))  # the report renders
    assert report.startswith("## Wall time at real latency") and "1/1 correct" in report


def test_fetches_that_served_no_page_read_are_counted() -> None:
    from bench.latency_measure import unread_fetches

    def page(path: str) -> Wait:
        return Wait("page", 0.0, 1.0, path)

    waits = [
        page("/wiki/A"),
        page("/wiki/B"),
        page("/wiki/A"),
        page("/wiki/C%21"),
        Wait("llm", 0, 1),
    ]
    read = ["http://127.0.0.1:1/wiki/A", "http://127.0.0.1:1/wiki/C!"]
    # B was never read; A's second fetch served nothing new.
    assert unread_fetches(waits, read) == 2


def test_report_quotes_medians_targets_and_composition() -> None:
    rows = [
        _figures(
            ITEM,
            {"status": "answered", "answer": "Stephen King", "usage": {"total_tokens": t}},
            wall,
            0.0,
            [Wait("llm", 1.0, 9.0, "AgentStep")],
        )
        for t, wall in ((9_000, 10.0), (30_000, 12.0), (11_000, 20.0))
    ]
    text = render(rows, {"page evidence": 60, "diary": 40}, 2, "load 1.0")
    assert text.startswith("## Wall time at real latency")
    assert "**3/3 correct**" in text and "**11,000**" in text  # median tokens
    assert "| overhead ratio | 1.50 | ≤ 1.15 (**not met**) | 1.33–1.39" in text
    assert "| tokens | 11,000 | ≤ 20,000 (met)" in text
    assert "| page evidence | 60 | **60.0%** |" in text
    assert "13 (ours then: 8)" in text and "python -m bench latency" in text
    assert "Every question was answered correctly." in text
    rows[1].correct, rows[1].status, rows[1].actions = False, "forced", ["search", "answer"]
    assert "Not answered correctly: #2 (forced; steps: search → answer)." in render(rows, {}, 0)


def test_repeated_runs_keep_the_fastest(monkeypatch: pytest.MonkeyPatch) -> None:
    walls = iter([7.0, 5.0, 6.0])

    def fake_run(self: Bench, item: Item) -> Figures:
        return _figures(item, {"status": "answered"}, next(walls), 0.0, [])

    monkeypatch.setattr(Bench, "run", fake_run)
    (kept,) = measure([ITEM], SITE, scale=0.0, runs=3)
    assert kept.wall_s == 5.0


def test_an_exit_tail_read_by_a_late_pump_is_zero_not_negative(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a loaded machine the thread pumping stdout can stamp the answer's last bytes
    after wait4 saw the exit: the tail was shorter than that delay, never negative."""
    import threading

    real = time.perf_counter
    main = threading.main_thread()

    def late_in_pumps() -> float:  # every stamp a pump takes is 5 s late
        return real() + (0.0 if threading.current_thread() is main else 5.0)

    monkeypatch.setattr(latency.time, "perf_counter", late_in_pumps)
    child = latency.run_child([sys.executable, "-c", "print('answer')"], env={}, cwd=".")
    assert child.stdout.strip() == "answer"
    assert child.exit_tail_s == 0.0
    # The child's own CPU and wall time (wait4's rusage, not this process's).
    assert 0 < child.cpu_s < 5 and child.wall_s > 0 and not child.killed
