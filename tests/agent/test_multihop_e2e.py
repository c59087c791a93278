"""The issue's "done when": a 2-hop question on link-dense loopback pages.

Real pages over loopback (>= 150 in-page links each: menu, inline, "See also", a
120-link navbox, footer), read by the real reader; search is in-process. The model
is scripted but reads its prompt like a model would: the second hop's name
("Miriam Vosk") stands only in the first page's text, no page links to the second
hop, and the search engine finds it only for a query naming her. So the run can
answer only if search comes back after the first visit, and only if both pages'
evidence is in view when the answer is written.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.schema import allowed_actions
from deepsearch.config import ReaderConfig
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.reader import LocalReader
from deepsearch.web.types import Page, ReadFailure, SearchQuery, SearchResult
from tests.agent.helpers import evaluator_reply, make_deps, options
from tests.fakes.clock import FakeClock
from tests.fakes.memory_web import FakeSearch
from tests.fakes.web_server import NAVBOX_TITLES, LoopbackServer, wiki_routes, wiki_slug

QUESTION = "In which year was the engineer who designed the Port Calder Lighthouse born?"
FILLER = (
    "The [[Western Shore]] has a long maritime history, and its [[harbour]]s were "
    "busy with the [[herring]] trade through the nineteenth century, when [[steamship]]s "
    "replaced the [[sailing ship]]s of the [[Calder Shipping Company]]."
)
ARTICLES = {
    "Port Calder Lighthouse": [
        "The [[Port Calder]] Lighthouse stands on [[Calder Head]] at the mouth of the "
        "[[River Calder]]. It was designed by the engineer Miriam Vosk and first lit in 1894.",
        "Its tower is 31 metres tall and built of [[granite]] from the [[Brack Quarry]]. "
        "The light was automated in 1978 by the [[Northern Lights Board]].",
        FILLER,
    ],
    "Miriam Vosk": [
        "Miriam Vosk (born 1851 in [[Tarnholm]]) was a civil engineer who built "
        "[[lighthouse]]s and [[breakwater]]s along the [[Western Shore]].",
        "She trained at the [[Tarnholm Polytechnic]] and worked for the "
        "[[Northern Lights Board]] from 1880 until her retirement in 1912.",
        FILLER,
    ],
    "Calder Head": [
        "Calder Head is a [[headland]] near [[Port Calder]] known for its [[seabird]] "
        "colonies and the ruins of a [[signal station]].",
        FILLER,
    ],
    "Lighthouses of the Western Shore": [
        "The [[Western Shore]] has more than twenty [[lighthouse]]s; most were built "
        "between 1850 and 1910 and are now automated.",
        FILLER,
    ],
}
_NAME = re.compile(r"designed by the engineer ([A-Z]\w+ [A-Z]\w+)")
_BORN = re.compile(r"born (\d{4})")


@pytest.fixture(scope="module")
def wiki() -> Iterator[LoopbackServer]:
    with LoopbackServer(routes=wiki_routes(ARTICLES)) as server:
        yield server


class RecordingReader(LocalReader):
    """The real reader, keeping each page it read (its links are checked after the run,
    not by reading every page a second time)."""

    def __init__(self) -> None:
        super().__init__(ReaderConfig(allow_private_urls=True), clock=FakeClock())
        self.pages: dict[str, Page] = {}

    async def read(self, url: str) -> Page | ReadFailure:
        page = await super().read(url)
        if isinstance(page, Page):
            self.pages[url] = page
        return page


@pytest.fixture
async def reader() -> AsyncIterator[RecordingReader]:
    r = RecordingReader()
    yield r
    await r.aclose()


def engine(wiki: LoopbackServer) -> FakeSearch:
    """Finds the lighthouse for lighthouse queries, the engineer only by her name."""

    def result(title: str, snippet: str) -> SearchResult:
        url = wiki.url(f"/wiki/{wiki_slug(title)}")
        return SearchResult(title=title, url=url, snippet=snippet, provider="fake")

    def search(query: SearchQuery) -> list[SearchResult]:
        q = query.q.lower()
        if "vosk" in q:
            return [result("Miriam Vosk", "Miriam Vosk was a civil engineer.")]
        if "lighthouse" in q:
            return [
                result("Port Calder Lighthouse", "A lighthouse on Calder Head, first lit 1894."),
                result("Lighthouses of the Western Shore", "More than twenty lighthouses."),
                result("Calder Head", "A headland near Port Calder."),
            ]
        return []

    return FakeSearch(search)


def offered(request: CompletionRequest) -> list[str]:
    return allowed_actions(request.json_schema or {})


def knowledge_of(system: str) -> str:
    match = re.search(r"<knowledge>(.*?)</knowledge>", system, re.S)
    return match.group(1) if match else ""


def reading_model(prompts: list[str]) -> Any:
    """Acts on what its prompt shows, as a model would."""

    def agent(request: CompletionRequest) -> dict[str, Any]:
        system, allowed = request.system, offered(request)
        prompts.append(system)
        seen = knowledge_of(system)
        name = _NAME.search(seen)
        born = _BORN.search(seen)
        if name and born and "answer" in allowed:
            text = (
                f"The lighthouse was designed by {name.group(1)}, who was born in {born.group(1)}."
            )
            return {"think": "both hops in view", "action": {"answer": {"answer": text}}}
        if (
            name
            and "search" in allowed
            and "vosk" not in system.split("<queries-done>")[-1].lower()
        ):
            query = f"{name.group(1)} engineer born"
            return {"think": "second hop", "action": {"search": {"queries": [query]}}}
        if "search" in allowed and "<queries-done>" not in system:
            query = "Port Calder Lighthouse designer"
            return {"think": "first hop", "action": {"search": {"queries": [query]}}}
        if "visit" in allowed:
            picks = [1, 2, 3]
            if name:  # the URL list line naming the second hop, if there is one
                listed = re.findall(r"^\[(\d+)\].*\n.*" + name.group(1), system, re.M)
                picks = [int(i) for i in listed] or picks
            return {"think": "read", "action": {"visit": {"url_indices": picks}}}
        action = "reflect" if "reflect" in allowed else allowed[0]
        payload = {"reflect": {"questions": ["Who designed it?"]}, "answer": {"answer": "unknown"}}
        return {"think": "stuck", "action": {action: payload.get(action, {})}}

    def reply(request: CompletionRequest) -> Any:
        if request.tool in ("agent", "agent_beast"):
            return agent(request)
        if request.tool == "finalizer":
            return request.messages[-1].content
        if request.tool == "error_analyzer":
            return {"recap": "r", "blame": "b", "improvement": "i"}
        return evaluator_reply(request)

    return reply


@pytest.mark.timeout(30)
async def test_two_hops_on_link_dense_pages_search_comes_back_after_a_visit(
    wiki: LoopbackServer, reader: RecordingReader
) -> None:
    prompts: list[str] = []
    search = engine(wiki)
    deps, provider = make_deps(reading_model(prompts), search=search, reader=reader)  # type: ignore[arg-type]
    run = ResearchRun(QUESTION, deps, options(max_steps=12))
    result = await run.run()

    assert result.status == "answered", (result.error, [s.detail for s in result.steps])
    assert "1851" in result.answer and "Miriam Vosk" in result.answer
    assert [s.action for s in result.steps] == ["search", "visit", "search", "visit", "answer"]
    assert any("vosk" in q.q.lower() for q in search.queries)
    # Harvested links filled the pool, yet never locked search out.
    assert sum(r.origin == "link" for r in run.state.url_pool.values()) >= 50
    # The answer's prompt still held the first hop's page, and no navbox.
    final = knowledge_of(prompts[-1])
    assert "designed by the engineer Miriam Vosk" in final and "born 1851" in final
    assert not any(t in final for t in NAVBOX_TITLES)
    assert result.references and any("1851" in r.quote for r in result.references)
    assert len(provider.calls) <= 12

    # The run read every article, each link-dense like Wikipedia; the first hop's page
    # links nowhere near the second hop.
    urls = {wiki.url(f"/wiki/{wiki_slug(title)}"): title for title in ARTICLES}
    assert set(reader.pages) == set(urls)
    for url, page in reader.pages.items():
        assert len(page.links) >= 150, urls[url]
    first = reader.pages[wiki.url("/wiki/Port_Calder_Lighthouse")]
    assert not any("Vosk" in url for _, url in first.links)  # no link to the second hop


async def test_the_loopback_site_pages_are_link_dense(reader: RecordingReader) -> None:
    from tests.fakes.web_server import site_routes

    with LoopbackServer(routes=site_routes()) as site:
        sample = await reader.read(site.url("/wiki/Bay_of_Fundy"))
    assert isinstance(sample, Page) and len(sample.links) >= 150
