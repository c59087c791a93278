"""Progress is new relevant evidence, judged by content (issue 18): the rule piece by
piece, and the repeated program that is not run again."""

from __future__ import annotations

from typing import Any

from deepsearch.agent.actions.coding import handle_coding, program_key
from deepsearch.agent.actions.search import handle_search
from deepsearch.agent.progress import NO_PROGRESS_LIMIT, ProgressWatch, ReadWatch, refusal
from deepsearch.agent.retrieval.evidence import PageEvidence, evidence_chunks
from deepsearch.agent.schema import CodingPayload, SearchPayload
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.errors import WebUnreadable
from tests.agent.helpers import make_deps, router, step_context
from tests.fakes.dead_end import CountingSandbox

QUESTION = "Which psychologist founded the Journal of Applied Memory Research?"
ON_TOPIC = (
    "The Journal of Applied Memory Research was founded in 1962 by the psychologist "
    "Hedda Marr, who edited it until 1980."
)
OFF_TOPIC = (
    "The coat of arms of Berlin shows a black bear on a silver shield. It was adopted "
    "in 1954 and appears on the city's flag."
)


def watched(state: AgentState) -> ProgressWatch:
    watch = ProgressWatch()
    assert not watch.stalled(state)  # the first call takes stock
    return watch


def read_page(state: AgentState, url: str, text: str) -> None:
    item = KnowledgeItem(question=f"page {url}", answer=text, type="url", references=[url])
    state.add_knowledge(item)
    state.add_evidence(PageEvidence(url=url, title=url, chunks=evidence_chunks(text), item=item))


def coding_result(state: AgentState, output: str) -> None:
    state.add_knowledge(KnowledgeItem(question="computed", answer=output, type="coding"))


def test_an_off_topic_page_is_nothing_new_an_on_topic_one_is_progress() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://example.org/coat-of-arms-of-berlin", OFF_TOPIC)
    assert not watch.judge(state)
    read_page(state, "https://example.org/journal", ON_TOPIC)
    assert watch.judge(state)
    # The same passage again (a mirror) is nothing new.
    read_page(state, "https://mirror.example.net/journal", ON_TOPIC)
    assert not watch.judge(state)


def test_a_page_relevant_only_to_an_open_sub_question_is_progress() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    bio = "Hedda Marr was born in Graz in 1921 and studied in Vienna."
    read_page(state, "https://example.org/marr-1", bio)
    assert not watch.judge(state)  # not about the question's words
    state.open_sub_questions(["When was Hedda Marr born?"])
    assert watch.judge(state)  # a new sub-question is progress itself
    read_page(state, "https://example.org/marr-2", bio.replace("Graz", "Linz"))
    assert watch.judge(state)


def test_an_identical_coding_result_is_nothing_new() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    coding_result(state, "11")
    assert watch.judge(state)
    coding_result(state, "11")
    assert not watch.judge(state)
    coding_result(state, "12")
    assert watch.judge(state)


def test_answers_sub_answers_and_lessons() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    state.add_knowledge(KnowledgeItem(question="q", answer="a", type="qa", pinned=True))
    assert watch.judge(state)  # an accepted sub-answer
    lesson = KnowledgeItem(question="rejected: Hedda Marr?", answer="too thin", type="qa")
    state.add_knowledge(lesson)
    assert watch.judge(state)  # a new answer's lesson
    state.add_knowledge(lesson.model_copy(update={"answer": "still too thin"}))
    assert not watch.judge(state)  # the same answer's lesson again, no attempt charged


def test_a_rejection_that_spends_a_check_attempt_or_a_recheck_is_progress() -> None:
    from deepsearch.agent.state import EvalMetric

    state = AgentState.start(QUESTION)
    watch = watched(state)
    state.metrics = [EvalMetric(type="definitive", attempts_left=2)]  # classified
    assert not watch.judge(state)
    state.record_rejection("definitive", "")
    assert watch.judge(state)  # bounded: the check has one attempt left
    assert not watch.judge(state)
    state.rechecks += 1
    assert watch.judge(state)


def test_steps_without_progress_stall_after_the_limit() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    for _ in range(NO_PROGRESS_LIMIT - 1):
        assert not watch.stalled(state)
    assert watch.stalled(state)
    assert watch.reason() == f"no new evidence in {NO_PROGRESS_LIMIT} steps"


def _results(query: Any) -> list[Any]:
    from deepsearch.web.types import SearchResult

    if "journal" not in query.q.lower():
        return []
    return [
        SearchResult(
            title="Journal of Applied Memory Research",
            url="https://example.org/journal",
            snippet="A psychology journal founded in 1962.",
            provider="fake",
        )
    ]


async def test_a_repeated_query_or_results_seen_before_are_nothing_new() -> None:
    from tests.fakes.memory_web import FakeSearch

    deps, _ = make_deps(router([]), search=FakeSearch(_results))  # no agent step asked
    state = AgentState.start(QUESTION)
    watch = watched(state)
    first = SearchPayload(queries=["journal of applied memory research founder"])
    await handle_search(first, step_context(state, deps))
    assert watch.judge(state)
    await handle_search(first, step_context(state, deps))  # the same query: not run
    assert not watch.judge(state)
    again = SearchPayload(queries=["applied memory journal psychologist founded"])
    await handle_search(again, step_context(state, deps))  # a new query, the same result
    assert not watch.judge(state)
    await handle_search(SearchPayload(queries=["berlin coat of arms"]), step_context(state, deps))
    assert not watch.judge(state)  # nothing came back


# ----------------------------------------------------------------- the repeated program


def coder(code: str) -> Any:
    def reply(request: Any) -> Any:
        assert request.tool == "coder"
        return {"think": "", "code": code}

    return reply


async def test_the_same_program_is_not_run_again_and_adds_nothing() -> None:
    sandbox = CountingSandbox()
    state = AgentState.start(QUESTION)
    payload = CodingPayload(problem="count the letters of hello world")
    deps, _ = make_deps(coder("print(len('hello world'))"), sandbox=sandbox)
    first = await handle_coding(payload, step_context(state, deps))
    assert first.detail.startswith("ok: 11")
    deps, _ = make_deps(coder('# again\nprint( len("hello world") )\n'), sandbox=sandbox)
    second = await handle_coding(payload, step_context(state, deps))
    assert len(sandbox.programs) == 1  # layout, quotes and comments do not make it new
    assert "not re-run: 11" in second.detail
    assert [k.type for k in state.knowledge] == ["coding"]
    assert "not run again" in state.diary[-1]


def test_a_program_that_reads_the_data_is_new_when_the_data_is() -> None:
    code = "result = len(data['knowledge'])"
    assert program_key(code, {"knowledge": []}) != program_key(code, {"knowledge": [1]})
    plain = "print(len('hello world'))"
    assert program_key(plain, {"knowledge": []}) == program_key(plain, {"knowledge": [1]})
    assert program_key("print(1)", {}) != program_key("print(2)", {})


# ----------------------------------------------------------------- unreadable web


def visit(state: AgentState, failures: dict[str, str]) -> None:
    state.mark_visiting(list(failures))
    for url, reason in failures.items():
        state.mark_failed(url, reason)


GUARD = "blocked: host '127.0.0.1' resolves to a non-public address (127.0.0.1)"


def searched(state: AgentState) -> AgentState:
    state.add_knowledge(KnowledgeItem(question="results", answer="x", type="side-info"))
    return state


def test_every_read_refused_in_two_visits_in_a_row_names_the_guard() -> None:
    state = searched(AgentState.start(QUESTION))
    watch = ReadWatch()
    visit(state, {"http://127.0.0.1/a": GUARD, "http://127.0.0.1/b": GUARD})
    watch.check(state)
    watch.check(state)  # a step that read nothing neither counts nor resets
    visit(state, {"http://127.0.0.1/c": GUARD})
    try:
        watch.check(state)
    except WebUnreadable as exc:
        assert exc.configuration and exc.fatal
        assert "--allow-private-urls" in str(exc) and "3 reads in 2 visits" in str(exc)
        assert "\n" not in str(exc)
    else:
        raise AssertionError("two refused visits in a row must end the run")


def test_a_404_or_a_page_read_resets_and_403s_are_no_configuration_cause() -> None:
    state = searched(AgentState.start(QUESTION))
    watch = ReadWatch()
    visit(state, {"https://a.org/1": GUARD})
    watch.check(state)
    visit(state, {"https://a.org/2": "http_status: HTTP 404 Not Found"})
    watch.check(state)  # the web answered: a missing page is no refusal
    assert watch.refused_steps == 0
    forbidden = "http_status: HTTP 403 Forbidden"
    visit(state, {"https://a.org/3": forbidden, "https://b.org/3": forbidden})
    watch.check(state)
    visit(state, {"https://c.org/4": forbidden})
    try:
        watch.check(state)
    except WebUnreadable as exc:
        assert not exc.configuration and "HTTP 403 Forbidden ×3" in str(exc)
    else:
        raise AssertionError("403 on every read twice in a row must end the run")


def test_without_any_search_result_refused_reads_do_not_end_the_run() -> None:
    state = AgentState.start(QUESTION)
    watch = ReadWatch()
    for n in range(3):
        visit(state, {f"http://127.0.0.1/{n}": GUARD})
        watch.check(state)
    assert refusal("http_status: HTTP 404 Not Found") is None
    assert refusal("network: ConnectError") == "network"
