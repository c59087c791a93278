"""`--record DIR`: wrappers around the run's real clients that write every call."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from deepsearch.cassettes import calls
from deepsearch.cassettes.store import RESULT_FILE, RUN_FILE, CassetteWriter, Redactor
from deepsearch.clock import SystemClock
from deepsearch.llm.base import Completion, CompletionRequest, LLMProvider
from deepsearch.llm.provider_common import Embeddings
from deepsearch.web.types import (
    Page,
    Reader,
    ReadFailure,
    SearchProvider,
    SearchQuery,
    SearchResult,
)

if TYPE_CHECKING:
    from deepsearch.agent.deps import AgentDeps, SandboxLike
    from deepsearch.config import Settings
    from deepsearch.sandbox.runner import SandboxResult

FORMAT = 1  # the cassette layout version, in run.json


class FrozenClock(SystemClock):
    """Wall time fixed at the run's start, real monotonic time and sleeps. The agent
    prompt's date/time line then reads the same when recorded and when replayed;
    timeouts and elapsed times stay real."""

    def __init__(self, start: datetime) -> None:
        self.start = start

    def now(self) -> datetime:
        return self.start


class RecordingProvider:
    """An LLM provider that writes each request and its reply (or error)."""

    def __init__(self, inner: LLMProvider, writer: CassetteWriter) -> None:
        self.inner = inner
        self.name = inner.name
        self._writer = writer

    async def complete(self, request: CompletionRequest) -> Completion:
        started = self._writer.start("llm", calls.llm_request(request))
        try:
            completion = await self.inner.complete(request)
        except Exception as exc:
            self._writer.finish("llm", started, error=calls.dump_error(exc))
            raise
        self._writer.finish("llm", started, response=completion.model_dump(mode="json"))
        return completion

    def prepare(self) -> None:
        prepare = getattr(self.inner, "prepare", None)
        if callable(prepare):
            prepare()

    async def ping(self) -> None:
        await self.inner.ping()

    async def aclose(self) -> None:
        await self.inner.aclose()


class RecordingEmbedder:
    def __init__(self, inner: Any, model: str, writer: CassetteWriter) -> None:
        self.inner = inner
        self.model = model
        self._writer = writer

    async def embed_with_usage(self, texts: Sequence[str]) -> Embeddings:
        started = self._writer.start("embed", calls.embed_request(self.model, list(texts)))
        with_usage = getattr(self.inner, "embed_with_usage", None)
        try:
            if with_usage is not None:
                got: Embeddings = await with_usage(texts)
            else:
                got = Embeddings(await self.inner.embed(texts), None)
        except Exception as exc:
            self._writer.finish("embed", started, error=calls.dump_error(exc))
            raise
        response = {"vectors": got.vectors, "prompt_tokens": got.prompt_tokens}
        self._writer.finish("embed", started, response=response)
        return got

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return (await self.embed_with_usage(texts)).vectors


class RecordingSearch:
    def __init__(self, inner: SearchProvider, writer: CassetteWriter) -> None:
        self.inner = inner
        self.name = inner.name
        self._writer = writer

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        started = self._writer.start("search", calls.search_request(query))
        try:
            results = await self.inner.search(query)
        except Exception as exc:
            self._writer.finish("search", started, error=calls.dump_error(exc))
            raise
        dumped = [r.model_dump(mode="json") for r in results]
        self._writer.finish("search", started, response={"results": dumped})
        return results


class RecordingReader:
    """A read that is cancelled (a prefetch no longer wanted) writes nothing."""

    def __init__(self, inner: Reader, writer: CassetteWriter) -> None:
        self.inner = inner
        self._writer = writer

    async def read(self, url: str) -> Page | ReadFailure:
        started = self._writer.start("read", calls.read_request(url))
        try:
            outcome = await self.inner.read(url)
        except Exception as exc:
            self._writer.finish("read", started, error=calls.dump_error(exc))
            raise
        field = "failure" if isinstance(outcome, ReadFailure) else "page"
        self._writer.finish("read", started, response={field: outcome.model_dump(mode="json")})
        return outcome


class RecordingSandbox:
    """Code runs are local, but their result depends on the machine (is isolation
    available at all?): recorded so a replay elsewhere decides the same way."""

    def __init__(self, inner: SandboxLike, writer: CassetteWriter) -> None:
        self.inner = inner
        self._writer = writer

    def availability(self) -> tuple[bool, str]:
        started = self._writer.start("sandbox", dict(calls.AVAILABILITY))
        usable, reason = self.inner.availability()
        self._writer.finish("sandbox", started, response={"usable": usable, "reason": reason})
        return usable, reason

    async def run(self, code: str, data: dict[str, Any]) -> SandboxResult:
        started = self._writer.start("sandbox", calls.sandbox_request(code, data))
        result = await self.inner.run(code, data)
        self._writer.finish("sandbox", started, response=result.model_dump(mode="json"))
        return result


def prompt_options(settings: Settings) -> dict[str, Any]:
    """The research options that shape the prompts (the budget sizes them), kept in
    run.json so a miss can say which one a replay changed."""
    agent = settings.agent.model_dump(mode="json", exclude={"effort", "budget"})
    options = {f"agent.{k}": v for k, v in agent.items() if not k.startswith("sandbox_")}
    options["agent.budget"] = settings.agent.token_budget
    options["llm.model"] = settings.llm.model
    # Where search looks changes every prompt's sources: a miss must be able to name
    # it (--corpus: the folder's name only, a cassette holds no path of this machine).
    options["search.providers"] = list(settings.search.providers)
    corpus = settings.search.corpus_dir
    options["search.corpus_dir"] = Path(corpus).name if corpus else None
    return options


class Recorder:
    """One recording: wraps clients, fixes the clock, writes run.json and result.json."""

    def __init__(
        self,
        directory: Path,
        *,
        secrets: Iterable[str] = (),
        started_at: datetime | None = None,
        options: dict[str, Any] | None = None,
        aliases: dict[str, str] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.options = options or {}
        self.writer = CassetteWriter(self.directory, Redactor(secrets, aliases))
        start = started_at or datetime.now(UTC).replace(microsecond=0)
        self.clock = FrozenClock(start)

    def wrap(self, deps: AgentDeps, *, question: str = "", embedding_model: str = "") -> None:
        """Wrap `deps`' clients in place (the LLM client's provider and embedder too)."""
        deps.llm.provider = RecordingProvider(deps.llm.provider, self.writer)
        if deps.llm.embedder is not None:
            deps.llm.embedder = RecordingEmbedder(deps.llm.embedder, embedding_model, self.writer)
        deps.search = RecordingSearch(deps.search, self.writer)
        deps.reader = RecordingReader(deps.reader, self.writer)
        if deps.sandbox is not None:
            deps.sandbox = RecordingSandbox(deps.sandbox, self.writer)
        deps.clock = self.clock
        self.write_run(
            question=question,
            provider=deps.llm.provider_name,
            search=deps.search.name,
            embedder=deps.llm.embedder is not None,
            sandbox=deps.sandbox is not None,
            llm_local=deps.llm.prices.local,  # a local server's calls cost $0 in a replay too
            options=self.options,
        )

    def write_run(self, **meta: Any) -> None:
        from deepsearch.version import __version__

        start = self.clock.start.isoformat()
        run = {"format": FORMAT, "version": __version__, "started_at": start, **meta}
        self.writer.write_json(RUN_FILE, run)

    def write_result(self, result: BaseModel | dict[str, Any]) -> None:
        value = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
        self.writer.sort()
        self.writer.write_json(RESULT_FILE, value)


def record_deps(
    deps: AgentDeps,
    directory: Path,
    *,
    secrets: Iterable[str] = (),
    question: str = "",
    embedding_model: str = "",
) -> Recorder:
    """Record every outside call `deps` makes to `directory` (wrapping it in place)."""
    recorder = Recorder(directory, secrets=secrets)
    recorder.wrap(deps, question=question, embedding_model=embedding_model)
    return recorder
