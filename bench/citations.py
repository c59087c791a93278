"""Citation precision in scripted end-to-end runs over HotpotQA-100.

For each question, the "web" is its ten context paragraphs (search returns them,
the reader serves them). A scripted model searches, visits, and answers with the
supporting-fact sentences, lightly reworded (so citations must be found by
similarity, not copied). The finalizer then anchors references. Measured:
- precision: share of reference quotes found verbatim (whitespace-normalized, in
  the plain-text view) in the page or snippet of the reference's own URL — the
  target is 100%;
- stray markers: the scripted answers carry citation markers the "LLM" wrote
  itself (`[^1][^2]`, `[3]`); runs whose final answer still has a `[^n]` beyond
  the number of references (must be 0), or markers other than exactly 1..n;
- coverage: share of answer sentences that received a citation;
- gold hits: share of references whose page is a gold (supporting) paragraph.

Reproduce: `python -m bench citations`
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
from pathlib import Path
from typing import Any

from deepsearch.agent.citations.quote_text import is_verbatim, strip_markers
from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.judging.evaluator import QuestionEval
from deepsearch.agent.loop import ResearchRun
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.types import SearchResult
from tests.fakes.clock import FakeClock
from tests.fakes.memory_web import FakeReader, FakeSearch
from tests.fakes.scripted_llm import scripted_client

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa100"
MARKER = re.compile(r"\[\^(\d+)\](?!:)")
REWORDINGS = [(" is ", " was "), (" was ", " is "), (" the ", " the "), (", ", " , ")]


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def reword(sentence: str) -> str:
    for old, new in REWORDINGS[:2]:
        if old in sentence:
            return sentence.replace(old, new, 1)
    return sentence


def answer_for(item: dict[str, Any], corpus: dict[str, list[str]]) -> str:
    sentences = []
    for title, index in item["supporting_facts"]:
        paragraph = corpus.get(title) or []
        if index < len(paragraph):
            sentences.append(reword(paragraph[index].strip()))
    sentences.append(f"So the answer is {item['answer']}.")
    # Markers the model wrote itself (glued, in a run, plain): the finalizer must drop them.
    sentences[0] += "[^1][^2]"
    sentences[-1] += " [3]"
    return " ".join(sentences)


def script(answer: str) -> Any:
    steps = [
        {"think": "", "action": {"search": {"queries": ["the question"]}}},
        {"think": "", "action": {"visit": {"url_indices": [1, 2, 3, 4, 5]}}},
        {"think": "", "action": {"answer": {"answer": answer}}},
    ]

    def reply(request: CompletionRequest) -> Any:
        props = (request.json_schema or {}).get("properties", {})
        if "needs_definitive" in props:
            return QuestionEval().model_dump()  # a plain fact question
        if request.tool in ("agent", "agent_beast"):
            return steps.pop(0) if len(steps) > 1 else steps[0]
        if request.tool == "finalizer":
            return request.messages[-1].content
        if "queries" in props:
            return {"think": "", "queries": []}
        return {"think": "", "pass": True, "improvement_plan": ""}

    return reply


async def one_run(item: dict[str, Any], corpus: dict[str, list[str]]) -> dict[str, Any]:
    paragraphs = {
        title: "".join(corpus[title]).strip() for title, _ in item["context"] if title in corpus
    }
    urls = {title: f"https://en.wikipedia.org/wiki/{slug(title)}" for title in paragraphs}
    gold = {urls[t] for t, _ in item["supporting_facts"] if t in urls}
    # Gold pages first among the results, so the five pages read include them.
    order = sorted(paragraphs, key=lambda t: urls[t] not in gold)
    results = [
        SearchResult(title=t, url=urls[t], snippet=paragraphs[t][:160], provider="bench")
        for t in order
    ]
    answer = answer_for(item, corpus)
    llm, _ = scripted_client(script(answer))
    deps = AgentDeps(
        llm=llm,
        search=FakeSearch(lambda q: results),
        reader=FakeReader({urls[t]: p for t, p in paragraphs.items()}),
        clock=FakeClock(),
    )
    run = ResearchRun(item["question"], deps, RunOptions(max_steps=5))
    result = await run.run()
    verbatim = []
    for ref in result.references:
        own = run.state.pages.get(ref.url) or run.state.snippets.get(ref.url)
        verbatim.append(own is not None and is_verbatim(ref.quote, own.text))
    body = result.answer.split('\n\n[^1]: "')[0]
    markers = [int(n) for n in MARKER.findall(body)]
    refs = len(result.references)
    sentences = max(1, len(re.findall(r"[.!?](?:\s|$)", strip_markers(answer))))
    return {
        "beyond": any(n > refs for n in markers),
        "not_1_to_n": markers != list(range(1, refs + 1)),
        "refs": len(result.references),
        "verbatim": sum(verbatim),
        "gold": sum(r.url in gold for r in result.references),
        "coverage": min(1.0, len(result.references) / sentences),
    }


def run() -> str:
    if not DATA.is_dir():
        return "## Citation precision\n\nSkipped: ../shared/data/hotpotqa100 is not present.\n"
    questions = json.loads((DATA / "hotpotqa_train.json").read_text("utf-8"))
    corpus = json.loads((DATA / "hotpotqa_train_corpus.json").read_text("utf-8"))
    rows = [asyncio.run(one_run(item, corpus)) for item in questions]
    refs = sum(r["refs"] for r in rows)
    verbatim = sum(r["verbatim"] for r in rows)
    gold = sum(r["gold"] for r in rows)
    with_refs = sum(r["refs"] > 0 for r in rows)
    coverage = statistics.mean(r["coverage"] for r in rows)
    precision = verbatim / refs if refs else 1.0
    beyond = sum(r["beyond"] for r in rows)
    not_1_to_n = sum(r["not_1_to_n"] for r in rows)
    return f"""## Citation precision (scripted end-to-end runs)

Command: `python -m bench citations` (bench/citations.py). {len(rows)} HotpotQA-100 questions;
each run searches, reads the question's paragraphs served as pages, and answers with
the supporting sentences lightly reworded plus its own stray markers (`[^1][^2]`,
`[3]`); the finalizer anchors the references with the offline lexical similarity.

| measure | value |
|---|---:|
| references produced | {refs} |
| quotes found verbatim in the page (or snippet) of their own URL | **{verbatim} / {refs} = {precision:.1%}** (target 100%) |
| runs whose answer has a marker beyond its references | **{beyond} / {len(rows)}** (must be 0) |
| runs whose markers are not exactly 1..n | {not_1_to_n} / {len(rows)} |
| runs with at least one citation | {with_refs} / {len(rows)} |
| answer sentences cited (mean per run) | {coverage:.1%} |
| references pointing at a gold (supporting) paragraph | {gold} / {refs} = {gold / max(1, refs):.1%} |
"""
