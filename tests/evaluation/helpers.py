"""A 5-question benchmark against the loopback fakes: the real `openai` SDK against the
fake OpenAI server (routed by schema and by question), SearXNG-shaped results, pages
on a loopback web server, and one answer-key page whose snippet holds every answer."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepsearch.agent.schema import allowed_actions
from tests.cli.test_config_and_doctor import Outcome, run_in_process
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer, _text

SECRET = "sk-eval-secret-0123456789"
N = 5  # every kind of row (right, wrong, not found) and a resume of more than one
WRONG, NOT_FOUND = "c04", "c05"  # answered wrongly / the model reports not found
KEY_HOST_URL = "https://huggingface.co/datasets/fake/capitals"
LEAK = "ANSWER-KEY-SNIPPET"


def item(i: int) -> dict[str, Any]:
    return {"id": f"c{i:02d}", "question": f"What is the capital of Country{i}?",
            "answer": f"City{i}", "aliases": [f"Town{i}"]}  # fmt: skip


def write_questions(path: Path, n: int = N) -> Path:
    path.write_text("".join(json.dumps(item(i)) + "\n" for i in range(1, n + 1)), "utf-8")
    return path


def pages() -> dict[str, Any]:
    html = "<html><head><title>Country{0}</title></head><body><article><p>The capital of Country{0} is City{0}. It is a city of parks and old bridges.</p></article></body></html>"  # noqa: E501
    return {
        f"/wiki/country{i}": _text(html.format(i).encode(), "text/html; charset=utf-8")
        for i in range(1, N + 1)
    }


def search_results(web: LoopbackServer) -> list[dict[str, str]]:
    results = [
        {"title": f"Country{i}", "url": web.url(f"/wiki/country{i}"),
         "content": f"Country{i} is a country."}
        for i in range(1, N + 1)
    ]  # fmt: skip
    leak = f"What is the capital of every country? {LEAK}: " + ", ".join(
        f"Country{i} City{i}" for i in range(1, N + 1)
    )
    results.insert(0, {"title": "capitals answer key", "url": KEY_HOST_URL, "content": leak})
    return results


class Router:
    """Per question: search, visit, answer (the answer by id: right, wrong, not found);
    `direct`: answer at step 1 (fast: two LLM calls a question).

    Agent steps are counted, not timed: `live` while one is at the server, `peak` the
    most at once. A step waits until `together` are in flight (`hold_s` only bounds the
    wait, for a run that sends them one by one); the first step then lasts `delay_s`, as an
    API takes time: steps sent with it are seen together with it."""

    def __init__(
        self, *, direct: bool = False, delay_s: float = 0.0, together: int = 1, hold_s: float = 10.0
    ) -> None:
        self.direct = direct
        self.delay_s = delay_s
        self.delayed = False
        self.together, self.hold_s = together, hold_s
        self.live = self.peak = 0
        self.all_here = threading.Event()
        self.steps: Counter[str] = Counter()
        self.graded: list[str] = []
        self.lock = threading.Lock()

    def answer_for(self, question: str) -> dict[str, Any]:
        number = int(question.split("Country")[1].rstrip("?"))
        qid = f"c{number:02d}"
        if qid == NOT_FOUND:
            return {"answer": "I searched for its capital; no page read names it.",
                    "supported": False}  # fmt: skip
        city = "City99" if qid == WRONG else f"City{number}"
        return {"answer": f"The capital is {city}."}

    def __call__(self, body: dict[str, Any]) -> Any:
        name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
        content = body["messages"][-1]["content"]
        if name == "AgentStep":
            return Reply(content=json.dumps(self.counted_step(body, content)))
        if name == "QuestionEval":
            return {"think": "", "needs_definitive": True, "needs_freshness": False,
                    "needs_plurality": False, "needs_completeness": False}  # fmt: skip
        if name == "StrictEval":
            return {"think": "ok", "pass": True, "improvement_plan": ""}
        if name == "GraderReply":
            return self.grade(content)
        if name in ("DefinitiveEval", "CompletenessEval"):
            return {"think": "ok", "pass": True}
        if name == "RewriteReply":
            return {"think": "", "queries": []}
        if name == "ErrorAnalysis":
            return {"recap": "r", "blame": "b", "improvement": "i"}
        if name is None:
            return content
        raise AssertionError(f"unexpected schema {name}")

    def counted_step(self, body: dict[str, Any], question: str) -> dict[str, Any]:
        with self.lock:
            self.live += 1
            self.peak = max(self.peak, self.live)
            if self.live >= self.together:
                self.all_here.set()
        try:
            if self.together > 1:
                self.all_here.wait(self.hold_s)
            with self.lock:
                delay_s, self.delayed = (0.0 if self.delayed else self.delay_s), True
            if delay_s:
                time.sleep(delay_s)  # counted as in flight: a step that overlaps shows
            return self.step(body, question)
        finally:
            with self.lock:
                self.live -= 1

    def step(self, body: dict[str, Any], question: str) -> dict[str, Any]:
        allowed = allowed_actions(body["response_format"]["json_schema"]["schema"])
        with self.lock:
            self.steps[question] += 1
            step = self.steps[question]
        if self.direct and step == 1:
            return {"think": "", "action": {"answer": self.answer_for(question)}}
        if step == 1 and "search" in allowed:
            return {"think": "", "action": {"search": {"queries": [question]}}}
        if step == 2 and "visit" in allowed:
            return {"think": "", "action": {"visit": {"url_indices": [1]}}}
        if "answer" in allowed:
            return {"think": "", "action": {"answer": self.answer_for(question)}}
        if "search" in allowed:
            return {"think": "", "action": {"search": {"queries": [f"{question} {step}"]}}}
        return {"think": "", "action": {"visit": {"url_indices": [step % 5 + 1]}}}

    def grade(self, content: str) -> dict[str, str]:
        gold = content.split("<gold-target>\n")[1].split(" ")[0].split("\n")[0]
        predicted = content.split("<predicted-answer>\n")[1]
        with self.lock:
            self.graded.append(gold)
        return {"think": "", "grade": "correct" if gold in predicted else "incorrect"}


Env = Callable[..., Outcome]


def eval_args(search: FakeSearchServers, *extra: str) -> list[str]:
    return ["--llm-provider", "openai", "--search-provider", "searxng",
            "--searxng-url", search.base_url("searxng"), "--allow-private-urls", "--no-cache",
            "--budget", "60000", "--quiet", *extra]  # fmt: skip


def run_eval(llm: FakeOpenAIServer, *args: str) -> Outcome:
    return run_in_process("eval", *args, OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=llm.base_url)


def run_offline(*args: str) -> Outcome:
    """No LLM server and no key at all (merge, replay)."""
    return run_in_process("eval", *args)
