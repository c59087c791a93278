"""Page evidence in the prompt: navigation dropped, passages for the research
questions, a per-page share, pinned support, and the first hop kept in view."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deepsearch.agent.context import item_tokens, select_knowledge
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.retrieval.evidence import (
    PageEvidence,
    anchor_texts,
    evidence_chunks,
    is_link_list,
    pin_support,
    refresh_all,
    refresh_page,
)
from deepsearch.agent.retrieval.similarity import LexicalSimilarity
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.types import Page, SearchResult
from tests.agent.helpers import evaluator_reply, make_deps, options
from tests.fakes.memory_web import FakeReader, FakeSearch
from tests.fakes.web_server import NAVBOX_TITLES

LEX = LexicalSimilarity()
NAV_LINKS = [(t, f"https://w.org/wiki/{t.replace(' ', '_')}") for t in NAVBOX_TITLES]
NAVBOX_LINE = " · ".join(NAVBOX_TITLES[:40])
SEE_ALSO = "\n".join(NAVBOX_TITLES[40:52])
PROSE = (
    "The Port Calder Lighthouse stands on Calder Head at the mouth of the River Calder. "
    "It was designed by the engineer Miriam Vosk and first lit in 1894, after the "
    "wreck of the Aldmere Pier ferry showed the need for a light on the headland."
)


def test_link_lists_are_detected_and_prose_with_inline_links_is_not() -> None:
    anchors = anchor_texts(NAV_LINKS)
    assert is_link_list(NAVBOX_LINE, anchors)
    assert is_link_list(SEE_ALSO)  # many short unpunctuated items, no anchors needed
    assert is_link_list("Home | About | Contact | Help | Donate | Log in")
    run_together = " ".join(NAVBOX_TITLES[:30])  # a navbox flattened to one line of text
    assert is_link_list(run_together, anchors)
    assert not is_link_list(run_together)  # only the page's own anchors reveal it
    assert not is_link_list(PROSE, anchors)  # names one navbox title inline: still prose
    assert not is_link_list(PROSE)
    menu = anchor_texts([("Home", "/"), ("About", "/a"), ("Contact", "/c"), ("Help", "/h")])
    assert is_link_list("Home About Contact Help", menu)
    assert not is_link_list("About the harbour: help came from the home port.", menu)


def test_an_infobox_is_evidence_not_navigation() -> None:
    infobox = "Designer\nMiriam Vosk\nFirst lit\n1894\nHeight\n31 m\nFocal height\n40 m"
    assert not is_link_list(infobox, anchor_texts([("Miriam Vosk", "/wiki/Miriam_Vosk")]))
    assert not is_link_list(infobox)  # figures mark it as data


def test_evidence_chunks_drop_navigation_and_stay_verbatim() -> None:
    text = f"{PROSE}\n\n{NAVBOX_LINE}\n\nSee also\n\n{SEE_ALSO}\n\n{PROSE.upper()}"
    chunks = evidence_chunks(text, anchor_texts(NAV_LINKS))
    assert chunks and all(c in text for c in chunks)
    joined = " ".join(chunks)
    assert "Miriam Vosk" in joined and "MIRIAM VOSK" in joined
    assert not any(t in joined for t in NAVBOX_TITLES[1:52] if t not in PROSE)


def page_evidence(url: str, paragraphs: list[str]) -> PageEvidence:
    item = KnowledgeItem(question=f"What does {url} say?", answer="", type="url", references=[url])
    return PageEvidence(url=url, title=url, chunks=paragraphs, item=item)


async def test_passages_serve_the_question_and_every_pending_sub_question() -> None:
    ev = page_evidence(
        "https://a.org",
        [
            "Weather on the coast is mild and wet for most of the year, with gales.",
            "The lighthouse was designed by the engineer Miriam Vosk in 1894.",
            "Bus services to the harbour run every hour in the summer season.",
            "Miriam Vosk was born in 1851 in Tarnholm and studied at its polytechnic.",
        ],
    )
    queries = ["Who designed the lighthouse?", "When was Miriam Vosk born?"]
    await refresh_page(ev, queries, LEX, 2000)
    assert ev.shown == [1, 3]  # one passage per question, none for neither
    assert "Bus services" not in ev.item.answer and "1851" in ev.item.answer
    many = page_evidence(
        "https://m.org", [f"Miriam Vosk designed lighthouse {i}." for i in range(9)]
    )
    await refresh_page(many, queries[:1], LEX, 12_000)
    assert len(many.shown) == 2  # lean: at most two passages per question, room or not


async def test_one_long_page_cannot_crowd_out_the_others() -> None:
    relevant = "The lighthouse was designed by the engineer Miriam Vosk, records say ({})."
    long_page = page_evidence("https://long.org", [relevant.format(i) for i in range(200)])
    short = [page_evidence(f"https://s{i}.org", [relevant.format(f"page {i}")]) for i in range(4)]
    pages = [long_page, *short]
    await refresh_all(
        pages, ["Who designed the lighthouse?"], LEX, evidence_tokens=2000, page_chars=12_000
    )
    share = 2000 * 4 // 5
    assert len(long_page.item.answer) <= share
    assert all("Miriam Vosk" in p.item.answer for p in pages)
    items = [p.item for p in pages]
    for n, item in enumerate(items):
        item.id = n + 1
    shown, omitted = select_knowledge(items, "Who designed the lighthouse?", 2500, current_step=3)
    assert omitted == 0 and len(shown) == 5


async def test_the_support_of_an_answer_is_pinned_and_always_shown() -> None:
    ev = page_evidence(
        "https://a.org",
        [
            "The lighthouse was designed by the engineer Miriam Vosk in 1894.",
            "Its tower is 31 metres tall and built of granite from the Brack quarry.",
        ],
    )
    ev.item.id = 1
    await refresh_page(ev, ["Who designed the lighthouse?"], LEX, 2000)
    assert await pin_support([ev], "Miriam Vosk designed the lighthouse.", LEX) == 1
    assert ev.pinned == {0} and ev.item.pinned
    # The research moved on: the questions no longer match the pinned passage...
    await refresh_page(ev, ["How tall is the tower in metres?"], LEX, 2000)
    assert "Miriam Vosk" in ev.item.answer and "31 metres" in ev.item.answer
    # ...and among many newer, more relevant items the pinned one is still shown.
    newer = [
        KnowledgeItem(id=i + 2, step=9, question="tower metres", answer="tower " * 300, type="qa")
        for i in range(8)
    ]
    room = sum(item_tokens(k) for k in newer[:4]) + 5  # four newer items fill the room
    shown, _ = select_knowledge([ev.item, *newer], "tower metres", room, current_step=9)
    assert ev.item in shown


def test_evidence_is_chosen_for_the_question_and_all_pending_sub_questions() -> None:
    st = AgentState.start("Q?")
    st.gaps += ["sub one?", "sub two?"]
    for step in range(3):  # whichever question is current this step
        st.step = step
        assert st.research_queries() == ["Q?", "sub one?", "sub two?"]


# ------------------------------------------------------------------- through the loop

QUESTION = "Who designed the Port Calder Lighthouse and what is its tower built of?"


def long_page(n: int) -> str:
    """A long article about the tower (relevant to the second half of the question),
    with a navbox and "See also" list in its text."""
    prose = " ".join(
        f"The tower of lighthouse number {n}.{i} is built of stone blocks and rises "
        f"above the harbour; its builders recorded the granite they used."
        for i in range(12)
    )
    return f"{prose}\n\n{NAVBOX_LINE}\n\n{SEE_ALSO}\n\n{prose}"


def scripted_visits(prompts: list[str]) -> Any:
    steps = [
        {"think": "", "action": {"search": {"queries": ["port calder lighthouse"]}}},
        {"think": "", "action": {"visit": {"url_indices": [1]}}},
        {
            "think": "",
            "action": {"reflect": {"questions": ["What is the tower built of?"]}},
        },
        {"think": "", "action": {"visit": {"url_indices": [1, 2, 3, 4, 5]}}},
        {"think": "", "action": {"search": {"queries": ["tower stone"]}}},
        {"think": "", "action": {"visit": {"url_indices": [1, 2, 3, 4, 5]}}},
    ]

    def reply(request: CompletionRequest) -> Any:
        if request.tool == "agent":
            prompts.append(request.system)
            return steps.pop(0) if len(steps) > 1 else steps[0]
        if request.tool == "agent_beast":
            prompts.append(request.system)
            return {"think": "", "action": {"answer": {"answer": "Miriam Vosk."}}}
        if request.tool == "finalizer":
            return request.messages[-1].content
        return evaluator_reply(request)

    return reply


async def test_the_first_hop_stays_in_view_after_many_long_pages() -> None:
    first = "https://calder.org/lighthouse"
    towers = [f"https://t{i}.org/tower" for i in range(10)]
    pages: dict[str, str | Page] = {first: PROSE, **{u: long_page(i) for i, u in enumerate(towers)}}
    hits = [
        SearchResult(title="Port Calder Lighthouse", url=first, snippet="lighthouse", provider="f")
    ]
    hits += [SearchResult(title="Tower", url=u, snippet="tower", provider="f") for u in towers]
    prompts: list[str] = []
    deps, _ = make_deps(
        scripted_visits(prompts),
        search=FakeSearch(lambda q: hits),
        reader=FakeReader(pages),
        budget=48_000,  # knowledge allowance: 4,000 tokens, a quarter of the pages read
    )
    run = ResearchRun(QUESTION, deps, options(max_steps=7))
    await run.run()
    assert len(run.state.read_urls) == 11
    last = prompts[-1]
    assert "designed by the engineer Miriam Vosk" in last  # hop 1, read at step 2
    assert not any(t in last for t in NAVBOX_TITLES[1:52])  # navigation never shown
    url_blocks = re.findall(r'<knowledge-\d+ type="url".*?</knowledge-\d+>', last, re.S)
    assert len(url_blocks) == 11  # every page read keeps a share
    evidence = sum(len(b) for b in url_blocks)
    assert evidence > 0.5 * len(last), "page evidence is most of the prompt"


async def test_a_candidate_answer_pins_the_passage_it_rests_on_in_the_loop() -> None:
    first = "https://calder.org/lighthouse"
    steps = [
        {"think": "", "action": {"search": {"queries": ["port calder lighthouse"]}}},
        {"think": "", "action": {"visit": {"url_indices": [1]}}},
        {"think": "", "action": {"answer": {"answer": "Miriam Vosk designed it."}}},
    ]
    queue = list(steps)

    def reply(request: CompletionRequest) -> Any:
        if request.tool in ("agent", "agent_beast"):
            return queue.pop(0) if len(queue) > 1 else queue[0]
        if request.tool == "finalizer":
            return request.messages[-1].content
        if request.tool == "error_analyzer":
            return {"recap": "r", "blame": "b", "improvement": "i"}
        return evaluator_reply(request, strict_pass=False)

    hit = SearchResult(title="Port Calder", url=first, snippet="lighthouse", provider="f")
    deps, _ = make_deps(
        reply, search=FakeSearch(lambda q: [hit]), reader=FakeReader({first: PROSE})
    )
    run = ResearchRun(QUESTION, deps, options(max_steps=3))
    await run.run()
    ev = run.state.evidence[first]
    assert ev.item.pinned
    assert any("Miriam Vosk" in ev.chunks[i] for i in ev.pinned)


class RecordingEmbeddings:
    """An 'embedding' backend that prefers chunks containing 'Leuchtturm'."""

    name = "embedding"
    dedup_threshold = 0.86
    cite_threshold = 0.8

    def __init__(self) -> None:
        self.calls = 0

    async def scores(self, query: str, texts: list[str]) -> list[float]:
        self.calls += 1
        return [0.9 if "Leuchtturm" in t else 0.1 for t in texts]


async def test_embeddings_score_a_page_only_when_no_query_word_is_on_it() -> None:
    sim = RecordingEmbeddings()
    german = page_evidence(
        "https://de.org",
        ["Das Wetter an der Küste ist mild.", "Der Leuchtturm wurde von Miriam Vosk entworfen."],
    )
    await refresh_page(german, ["Who designed the lighthouse?"], sim, 2000)  # type: ignore[arg-type]
    assert sim.calls == 1 and german.shown == [1]
    english = page_evidence(
        "https://en.org", ["The weather is mild.", "The lighthouse was designed."]
    )
    await refresh_page(english, ["Who designed the lighthouse?"], sim, 2000)  # type: ignore[arg-type]
    assert sim.calls == 1 and english.shown == [1]  # lexical found it: no embedding tokens
    await refresh_page(german, ["Who designed the lighthouse?"], sim, 2000)  # type: ignore[arg-type]
    assert sim.calls == 1  # cached per (page, query)


async def test_a_heading_joins_its_paragraph_and_an_unmatched_page_shows_its_lead() -> None:
    text = f"Port Calder Lighthouse\n\n{PROSE}\n\n{NAVBOX_LINE}\n\nHistory\n\n{PROSE.upper()}"
    chunks = evidence_chunks(text)
    assert chunks[0].startswith("Port Calder Lighthouse\n\nThe Port Calder") and chunks[0] in text
    assert chunks[1].startswith("History\n\nTHE PORT")  # the navbox split the runs
    assert len(chunks) == 2
    ev = page_evidence("https://x.org", ["Contents", PROSE, "Other text about ships."])
    await refresh_page(ev, ["zzz qqq"], LEX, 2000)
    assert ev.shown == [1]  # the lead paragraph, not the "Contents" heading


def test_only_the_newest_search_snippets_are_shown_within_their_share() -> None:
    snippets = [
        KnowledgeItem(
            id=i + 1, step=i, question=f"results {i}?", answer="snippet " * 40, type="side-info"
        )
        for i in range(5)
    ]
    page = KnowledgeItem(id=6, step=5, question="page?", answer="evidence " * 40, type="url")
    shown, omitted = select_knowledge([*snippets, page], "q", 10_000, current_step=6)
    assert shown == [snippets[3], snippets[4], page] and omitted == 3
    tight = item_tokens(page) + item_tokens(snippets[4]) * 2 - 1  # share: 20% of this
    shown, _ = select_knowledge([*snippets, page], "q", tight, current_step=6)
    assert [k.type for k in shown] == ["url"]


def test_knowledge_that_fits_by_its_byte_bound_is_shown_without_counting_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exact count (the vocabulary) is needed only when the bound does not fit."""
    import deepsearch.agent.context as context

    items = [
        KnowledgeItem(id=i + 1, step=i, question=f"q{i}?", answer="evidence " * 40, type="url")
        for i in range(4)
    ]

    def no_count(text: str, **_: object) -> int:
        raise AssertionError("counted")

    monkeypatch.setattr(context, "count_tokens", no_count)
    shown, omitted = select_knowledge(items, "q", 10_000, current_step=4)
    assert shown == items and omitted == 0
    with pytest.raises(AssertionError, match="counted"):  # too tight for the bound
        select_knowledge(items, "q", 200, current_step=4)
