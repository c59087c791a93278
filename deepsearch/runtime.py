"""Build a research run's dependencies from the settings (the only place that does)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.events import Activity, AgentEvent, Notice, safe_emit
from deepsearch.agent.retrieval.similarity import Similarity, make_similarity
from deepsearch.agent.stalls import call_purpose, call_watch
from deepsearch.config import Settings
from deepsearch.llm.client import LLMClient
from deepsearch.llm.tracker import TokenTracker
from deepsearch.tracing import TracedReader, TracedSearch, TraceWriter
from deepsearch.web.types import (
    Page,
    Reader,
    ReadFailure,
    SearchProvider,
    SearchQuery,
    SearchResult,
)
from deepsearch.web.urls import is_local_url

if TYPE_CHECKING:  # the local corpus module is only needed when a run builds one
    from deepsearch.agent.deps import SandboxLike
    from deepsearch.agent.result import ResearchResult
    from deepsearch.cassettes import CassetteSpec, Player, Recorder
    from deepsearch.clock import Clock
    from deepsearch.web.search.local import IndexProgress, LocalCorpus

    CassetteSession = Recorder | Player


def run_options(settings: Settings) -> RunOptions:
    return RunOptions.from_settings(settings)


def secret_values(settings: Settings) -> list[str]:
    return settings.secret_values()


def build_similarity(llm: LLMClient) -> Similarity:
    """Provider embeddings when the client has an embedder, else the lexical backend."""
    return make_similarity(llm.embed if llm.embedder is not None else None)


def build_trace(
    path: Path | None,
    settings: Settings,
    question: str = "",
    *,
    tags: Mapping[str, Any] | None = None,
) -> TraceWriter | None:
    """The --trace writer (appending), its first record of this run a header; `tags`
    go into every record (serve: the request id)."""
    if not path:
        return None
    from deepsearch.config import LoadedConfig, effective_values

    trace = TraceWriter(path, secrets=secret_values(settings), tags=tags)
    shown = effective_values(LoadedConfig(settings=settings, sources={}))
    trace.header(question, {key: value for key, (value, _) in shown.items()})
    return trace


def open_cassette(spec: CassetteSpec | None, settings: Settings) -> CassetteSession | None:
    """The --record / --replay / --replay-lenient session (None without one)."""
    if spec is None:
        return None
    from deepsearch.cassettes import Player, Recorder
    from deepsearch.cassettes.record import prompt_options
    from deepsearch.cassettes.store import corpus_aliases

    common: dict[str, Any] = {
        "secrets": secret_values(settings),
        "options": prompt_options(settings),
        "aliases": corpus_aliases(settings.search.corpus_dir),
    }
    if spec.mode == "record":
        return Recorder(spec.directory, started_at=spec.started_at, **common)
    return Player(spec.directory, lenient=spec.mode == "lenient", **common)


def finish_cassette(session: CassetteSession | None, result: ResearchResult) -> ResearchResult:
    """Recording: the result goes to result.json. Replay: a call the cassette could not
    answer fails the run (exit 1) even where the run itself worked around the error."""
    if session is None:
        return result
    from deepsearch.cassettes import Player  # only when a cassette is in use
    from deepsearch.files import describe

    if isinstance(session, Player):
        miss = session.first_miss(result.visited_urls, question=result.question)
        if miss is not None:
            result = result.model_copy(
                update={"status": "failed", "error": miss, "error_kind": "fatal"}
            )
    else:
        try:
            session.write_result(result)
        except OSError as exc:  # the run is unaltered; the recording is not whole
            error = f"the recording in {session.directory} is incomplete: {describe(exc)}"
            if result.error is None:
                result = result.model_copy(update={"error": error, "error_kind": "runtime"})
    return result


async def build_deps(
    settings: Settings,
    *,
    stack: AsyncExitStack,
    emit: Callable[[AgentEvent], None],
    trace: TraceWriter | None,
    cassette: CassetteSession | None = None,
    question: str = "",
) -> AgentDeps:
    """Construct the LLM client, search chain, reader and sandbox; closers go on `stack`.

    With a cassette Player nothing outside is built (no key, no network, no corpus
    index): the cassette answers every call; with a Recorder every client is wrapped."""
    if trace is not None:  # a trace that cannot be written: said once, the run goes on
        trace.on_failure = lambda why: safe_emit(emit, Notice(text=why, once="trace"))
    if cassette is not None:  # the cassette package only when a cassette is in use
        from deepsearch.cassettes import Player

        if isinstance(cassette, Player):
            return _replay_deps(settings, cassette, emit=emit, trace=trace)
    deps = await _live_deps(settings, stack=stack, emit=emit, trace=trace)
    if cassette is not None:
        cassette.wrap(deps, question=question, embedding_model=_embedding_model(settings))
    return deps


def _embedding_model(settings: Settings) -> str:
    return settings.llm.embedding_model or settings.llm.jina_embedding_model or ""


def _replay_deps(
    settings: Settings,
    player: Player,
    *,
    emit: Callable[[AgentEvent], None],
    trace: TraceWriter | None,
) -> AgentDeps:
    from deepsearch.agent.steps.rewrite import make_query_rewriter

    tracker = TokenTracker(settings.agent.token_budget, max_cost=settings.agent.max_cost)
    llm = player.llm_client(settings, tracker, trace=llm_tap(emit, tracker, trace))
    check_prices(settings, llm, emit)
    search: SearchProvider = player.search()
    reader: Reader = player.reader()
    if trace is not None:
        search, reader = TracedSearch(search, trace), TracedReader(reader, trace)
    similarity = build_similarity(llm)
    return AgentDeps(
        llm=llm,
        search=ActivitySearch(search, emit),
        reader=ActivityReader(reader, emit),
        clock=player.clock,
        sandbox=player.sandbox(),
        emit=emit,
        similarity=similarity,
        rewrite_queries=make_query_rewriter(llm, similarity),
    )


async def _live_deps(
    settings: Settings,
    *,
    stack: AsyncExitStack,
    emit: Callable[[AgentEvent], None],
    trace: TraceWriter | None,
) -> AgentDeps:
    from deepsearch.clock import SystemClock
    from deepsearch.sandbox.runner import Sandbox, SandboxLimits

    clock = SystemClock()  # one clock for the run's parts (deepsearch.clock)
    limits = SandboxLimits(
        cpu_s=settings.agent.sandbox_cpu_s,
        wall_s=settings.agent.sandbox_wall_s,
        memory_mb=settings.agent.sandbox_memory_mb,
    )
    # Its probe (cached; it starts processes) is the run's to start, in a thread beside
    # step 1's LLM request: coding is never offered before step 2 (agent/gating.py).
    sandbox = Sandbox(limits, clock=clock)
    return await _connected_deps(
        settings, stack=stack, emit=emit, trace=trace, clock=clock, sandbox=sandbox
    )


async def _connected_deps(
    settings: Settings,
    *,
    stack: AsyncExitStack,
    emit: Callable[[AgentEvent], None],
    trace: TraceWriter | None,
    clock: Clock,
    sandbox: SandboxLike,
) -> AgentDeps:
    """The LLM client, the cache, the corpus, the search chain and the reader."""
    from deepsearch.agent.steps.rewrite import make_query_rewriter
    from deepsearch.llm.call_watch import watching
    from deepsearch.llm.factory import build_llm_client
    from deepsearch.llm.waits import listening
    from deepsearch.web.cache import WebCache
    from deepsearch.web.reader import build_reader
    from deepsearch.web.search import build_search, local_corpus
    from deepsearch.web.search.fused import FusedSearch

    tracker = TokenTracker(settings.agent.token_budget, max_cost=settings.agent.max_cost)
    tap = llm_tap(emit, tracker, trace)
    # A retry's pause is told (`rate limited (HTTP 429), retrying in 4 s`), not silent;
    # each call's phase (no first token yet, retrying, generating) goes to the spinner.
    stack.enter_context(listening(lambda text: safe_emit(emit, Notice(text=text))))
    stack.enter_context(watching(calls := call_watch(clock, emit)))
    llm = build_llm_client(settings, tracker, trace=tap)
    stack.push_async_callback(llm.aclose)
    check_prices(settings, llm, emit)

    cache = WebCache(settings.cache.dir, enabled=settings.cache.enabled, clock=clock)
    stack.callback(cache.close)
    corpus = local_corpus(settings)
    if corpus is not None:  # indexed now, with progress: an empty folder is exit 2 at once
        corpus.on_progress = corpus_progress(emit)
        await asyncio.to_thread(corpus.require_documents)
    search: SearchProvider = build_search(settings, cache=cache, corpus=corpus)
    if isinstance(search, FusedSearch):
        search.on_web_failure = lambda text: safe_emit(emit, Notice(text=text, once="web-failed"))
    web_reader = build_reader(settings, cache=cache, clock=clock)
    _push_close(stack, search)
    _push_close(stack, web_reader)
    reader: Reader = RoutingReader(web_reader, corpus)
    if trace is not None:
        search = TracedSearch(search, trace)
        reader = TracedReader(reader, trace)
    search, reader = ActivitySearch(search, emit), ActivityReader(reader, emit)

    similarity = build_similarity(llm)
    return AgentDeps(
        llm=llm,
        search=search,
        reader=reader,
        sandbox=sandbox,
        clock=clock,
        emit=emit,
        similarity=similarity,
        rewrite_queries=make_query_rewriter(llm, similarity),
        calls=calls,
    )


class RoutingReader:
    """file:// URLs of the local corpus go to the corpus; everything else to the web reader
    (whose SSRF guard would rightly refuse file://)."""

    def __init__(self, web: Reader, corpus: LocalCorpus | None) -> None:
        self.web = web
        self.corpus = corpus

    async def read(self, url: str) -> Page | ReadFailure:
        if not is_local_url(url):  # a web run never loads the corpus module (~3 ms)
            return await self.web.read(url)
        if self.corpus is None:
            why = "local files are readable only with --corpus"
            return ReadFailure(url=url, kind="blocked", detail=why)
        from deepsearch.web.search.local import read_local

        return await read_local(url, self.corpus)

    def warm(self) -> None:
        _warm(self.web)


TraceFn = Callable[[str, dict[str, Any]], None]


def corpus_progress(emit: Callable[[AgentEvent], None]) -> Callable[[IndexProgress], None]:
    """The corpus build's progress as live-view events, and one line when it is done."""
    # The corpus summary's own byte formatter (commands.units.size names it for the CLI).
    from deepsearch.web.search.local_progress import human_size as size

    def report(p: IndexProgress) -> None:
        if not p.finished:
            done = (
                f"{p.files_done}/{p.files_total} files, {size(p.bytes_done)}/{size(p.bytes_total)}"
            )
            safe_emit(emit, Activity(what="index", delta=1, detail=done))
            return
        safe_emit(emit, Activity(what="index", delta=-1))
        safe_emit(emit, Notice(text=index_summary(p)))

    return report


def index_summary(p: IndexProgress) -> str:
    """`corpus: 15 documents indexed from 17 files (4.2 MB; 12 unchanged, 5 read); 2 binary
    files skipped` (IndexProgress.summary: skipped, empty and unchanged told apart)."""
    return p.summary()


def check_prices(settings: Settings, llm: LLMClient, emit: Callable[[AgentEvent], None]) -> None:
    """Before any call: a cost limit needs every model's price (else ConfigError, exit 2:
    llm/prices.py); without a limit, an unpriced model is said once (its cost: null)."""
    from deepsearch.llm.prices import unpriced_notice

    text = unpriced_notice(settings, llm.provider_name, llm.prices)
    if text is not None:
        safe_emit(emit, Notice(text=text, once="unpriced_model"))


def llm_tap(
    emit: Callable[[AgentEvent], None], tracker: TokenTracker, trace: TraceWriter | None
) -> LlmTap:
    return LlmTap(emit, tracker, trace)


class LlmTap:
    """The LLM client's trace hook, also telling the live view which call is in flight
    (named as agent/stalls.call_purpose names it; where it stands is the run's call
    watch's to tell). A response names only its tool, so it ends that tool's oldest
    call in flight."""

    def __init__(
        self, emit: Callable[[AgentEvent], None], tracker: TokenTracker, trace: TraceWriter | None
    ) -> None:
        self._emit, self._tracker, self._trace = emit, tracker, trace
        self._pending: dict[str, list[str]] = {}

    def __call__(self, kind: str, payload: dict[str, Any]) -> None:
        if self._trace is not None:
            self._trace(kind, payload)
        if kind not in ("llm_request", "llm_response", "llm_error"):
            return
        delta: Literal[1, -1] = 1 if kind == "llm_request" else -1
        tool = str(payload.get("tool", ""))
        calls = self._pending.setdefault(tool, [])
        if delta == 1:
            calls.append(call_purpose(tool, str(payload.get("schema_name", ""))))
        purpose = (calls[-1] if delta == 1 else calls.pop(0)) if calls else tool
        tracker = self._tracker
        activity = Activity(
            what="llm", delta=delta, tool=purpose, tokens_used=tracker.used,
            cost_usd=tracker.cost_usd, max_cost=tracker.max_cost,
        )  # fmt: skip
        safe_emit(self._emit, activity)


class ActivitySearch:
    """Tells the live view a search is in flight (the spinner: "searching 3 queries")."""

    def __init__(self, inner: SearchProvider, emit: Callable[[AgentEvent], None]) -> None:
        self.inner = inner
        self.name = inner.name
        self._emit = emit

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        safe_emit(self._emit, Activity(what="search", delta=1))
        try:
            return await self.inner.search(query)
        finally:
            safe_emit(self._emit, Activity(what="search", delta=-1))


class ActivityReader:
    """Tells the live view a page is being read ("reading 5 pages")."""

    def __init__(self, inner: Reader, emit: Callable[[AgentEvent], None]) -> None:
        self.inner = inner
        self._emit = emit

    async def read(self, url: str) -> Page | ReadFailure:
        safe_emit(self._emit, Activity(what="read", delta=1))
        try:
            return await self.inner.read(url)
        finally:
            safe_emit(self._emit, Activity(what="read", delta=-1))

    def warm(self) -> None:
        _warm(self.inner)


def _warm(reader: object) -> None:
    """Pass on the agent's "a visit is likely" (prefetch.warm_reader) to a reader
    with a one-time set-up to start."""
    warm: Callable[[], None] | None = getattr(reader, "warm", None)
    if warm is not None:
        warm()


def _push_close(stack: AsyncExitStack, obj: object) -> None:
    closer: Callable[[], Awaitable[None]] | None = getattr(obj, "aclose", None)
    if closer is not None:
        stack.push_async_callback(closer)
