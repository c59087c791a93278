"""What one run hands to a follow-up (`deepsearch -c`): its question and answer, the
knowledge it gathered (sub-answers, notes, the passages of every page it read, with
their URLs) and its URL list (search results with their snippets, the queries run).

`capture` takes a Carryover from a finished run's state; `seed` puts one into a new
run's state before its first step, so that the pages the earlier run read are in the
new run's knowledge and never fetched again (they are marked visited: the URL list
never offers them, a visit never picks them), and its search results are in the URL
list without searching again. The earlier question and answer become one pinned `qa`
item, as a conversation's earlier turn does for `serve` (server/request.py).

Plain data (pydantic), so the history (deepsearch/history/) keeps it as JSON.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from deepsearch.agent.state import AgentState, PageText
from deepsearch.agent.types import KnowledgeItem, UrlRecord
from deepsearch.prompts import render

# Kept per page: its evidence chunks only, navigation dropped, not the whole text as
# well (each chunk is an exact slice of the page text, so a quote taken from one is
# verbatim in the chunks joined); at most MAX_PAGE_CHARS of them (a history is kept
# for years: ~100 kB a page, not the 400 kB a run may hold).
MAX_CARRIED_PAGES = 60
MAX_CARRIED_URLS = 300
MAX_PAGE_CHARS = 100_000


class CarriedPage(BaseModel):
    """A page the earlier run read: its evidence chunks, with the page's URL."""

    url: str
    title: str = ""
    date: str | None = None
    chunks: list[str] = Field(default_factory=list)

    @property
    def text(self) -> str:
        """The page as the follow-up cites it: its chunks, in order."""
        return "\n\n".join(self.chunks)


class Carryover(BaseModel):
    """An earlier run, as a follow-up starts from it."""

    run_id: str = ""
    question: str
    answer: str = ""
    knowledge: list[KnowledgeItem] = Field(default_factory=list)  # not the pages' own
    pages: list[CarriedPage] = Field(default_factory=list)
    urls: list[UrlRecord] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)
    failed_urls: dict[str, str] = Field(default_factory=dict)

    @property
    def urls_read(self) -> list[str]:
        return [page.url for page in self.pages]


def capture(state: AgentState, answer: str, *, run_id: str = "") -> Carryover:
    """The run's handover (what `seed` gives a follow-up); the run's own carryover
    included, so that a chain of follow-ups keeps everything read along it."""
    pages: list[CarriedPage] = []
    for url, page in list(state.pages.items())[-MAX_CARRIED_PAGES:]:
        evidence = state.evidence.get(url)
        chunks = _capped(evidence.chunks if evidence is not None else [page.text])
        pages.append(CarriedPage(url=url, title=page.title, date=page.date, chunks=chunks))
    knowledge = [
        item.model_copy(update={"pinned": False}) for item in state.knowledge if item.type != "url"
    ]
    pool = sorted(state.url_pool.values(), key=lambda r: r.weight, reverse=True)
    return Carryover(
        run_id=run_id,
        question=state.question,
        answer=answer,
        knowledge=knowledge,
        pages=pages,
        urls=[r.model_copy() for r in pool[:MAX_CARRIED_URLS]],
        queries=list(dict.fromkeys(state.searched_queries)),
        failed_urls=dict(state.failed_urls),
    )


def _capped(chunks: list[str]) -> list[str]:
    kept: list[str] = []
    room = MAX_PAGE_CHARS
    for chunk in chunks:
        if room <= 0:
            break
        kept.append(chunk[:room])
        room -= len(chunk)
    return kept


def seed(state: AgentState, carry: Carryover) -> None:
    """Start `state` from what the earlier run found (see the module docstring)."""
    if carry.answer:
        state.add_knowledge(
            KnowledgeItem(
                question=render("context/conversation_turn", asked=carry.question),
                answer=carry.answer,
                type="qa",
                pinned=True,
            )
        )
    for item in carry.knowledge:
        state.add_knowledge(item.model_copy(update={"pinned": False}))
    for record in carry.urls:
        if record.url not in state.url_pool:
            state.url_pool[record.url] = record.model_copy()
        if record.origin == "search" and record.snippet and record.url not in state.snippets:
            state.snippets[record.url] = PageText(
                url=record.url, title=record.title, text=record.snippet, date=record.date
            )
    for page in carry.pages:
        _seed_page(state, page)
    state.failed_urls.update(carry.failed_urls)
    state.record_queries([q for q in carry.queries if q not in state.searched_queries])


def _seed_page(state: AgentState, page: CarriedPage) -> None:
    if page.url in state.pages:
        return
    state.mark_visiting([page.url])
    read = PageText(url=page.url, title=page.title, text=page.text, date=page.date)
    state.record_page(read)
    state.add_page_evidence(read, list(page.chunks))
