"""`--replay DIR` / `--replay-lenient DIR`: clients that answer every call from a
cassette, so a run needs neither network nor key."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepsearch.cassettes import calls
from deepsearch.cassettes.record import FrozenClock
from deepsearch.cassettes.store import (
    KINDS,
    RESULT_FILE,
    CassetteMiss,
    Redactor,
    load_run,
    read_lines,
)
from deepsearch.cassettes.table import Table
from deepsearch.llm.base import Completion, CompletionRequest
from deepsearch.llm.provider_common import Embeddings
from deepsearch.web.types import Page, ReadFailure, SearchQuery, SearchResult

if TYPE_CHECKING:
    from deepsearch.agent.deps import AgentDeps
    from deepsearch.config import ProviderName, Settings
    from deepsearch.llm.client import LLMClient, TraceFn
    from deepsearch.llm.tracker import TokenTracker
    from deepsearch.sandbox.runner import SandboxResult


class Player:
    """One replay: the loaded tables, the fixed clock, and the misses seen so far."""

    def __init__(
        self,
        directory: Path,
        *,
        lenient: bool = False,
        secrets: Iterable[str] = (),
        options: dict[str, Any] | None = None,
        aliases: dict[str, str] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.lenient = lenient
        self.options = options or {}  # this run's research options, for the miss hint
        self.run = load_run(self.directory)
        # A recording killed mid-run has no result.json: its calls stop early.
        self.complete = (self.directory / RESULT_FILE).is_file()
        self.redactor = Redactor(secrets, aliases)
        self.tables = {
            kind: Table(kind, read_lines(self.directory / f"{kind}.jsonl"), lenient=lenient)
            for kind in KINDS
        }
        self.clock = FrozenClock(_started_at(self.run, self.directory))
        self._misses: list[tuple[str, str]] = []  # (kind, message); reads: (read URL, ...)
        self._lock = threading.Lock()

    def answer(self, kind: str, request: dict[str, Any]) -> dict[str, Any]:
        """The recorded line; a miss is remembered (callers may swallow the error)."""
        try:
            return self.redactor.expand(self.tables[kind].answer(self.redactor.obj(request)))
        except CassetteMiss as exc:
            with self._lock:
                self._misses.append((kind, str(exc)))
            raise

    def first_miss(self, visited: Iterable[str] = (), *, question: str | None = None) -> str | None:
        """The first miss that mattered: any LLM, embedding, search or sandbox call
        (strict), or a read of a URL the run went on to visit; a background read
        nobody used does not count. Lenient replay counts only LLM calls. `question`:
        the one asked now, named in the message when the recording's was another."""
        used = {f"read of {url!r}" for url in visited}
        for kind, message in self._misses:
            if kind == "read":
                if not self.lenient and any(message.startswith(u) for u in used):
                    return message + self._hint(question)
            elif kind == "llm" or not self.lenient:
                return message + self._hint(question)
        return None

    def _hint(self, question: str | None) -> str:
        """The usual causes of a miss: another question than the recording's (named
        first: it changes every prompt), or other research options, as
        `; recorded with agent.budget=200000 (now 100000)`."""
        recorded_question = str(self.run.get("question") or "")
        asked = self.redactor.text(question) if question is not None else None
        hints = []
        if not self.complete:
            hints.append(
                f"the recording is incomplete (no {RESULT_FILE}: the recorded run was cut "
                "short, so its calls end early)"
            )
        if (
            asked is not None
            and recorded_question
            and " ".join(asked.split()) != " ".join(recorded_question.split())
        ):
            hints.append(f"recorded for another question: {recorded_question!r} (now {asked!r})")
        recorded = self.run.get("options") or {}
        changed = [
            f"{key}={recorded[key]!r} (now {self.options[key]!r})"
            for key in sorted(set(recorded) & set(self.options))
            if recorded[key] != self.options[key]
        ]
        if changed:
            hints.append(f"recorded with {', '.join(changed)}")
        return "".join(f"; {hint}" for hint in hints)

    def provider_name(self, settings: Settings) -> ProviderName:
        recorded = str(self.run.get("provider") or "openai")
        return settings.llm.provider or recorded  # type: ignore[return-value]

    def llm_client(
        self, settings: Settings, tracker: TokenTracker, *, trace: TraceFn | None = None
    ) -> LLMClient:
        """A client over the cassette: built without any key or SDK."""
        from deepsearch.llm.client import LLMClient

        name = self.provider_name(settings)
        model = settings.llm.embedding_model or settings.llm.jina_embedding_model
        embedder = ReplayEmbedder(self, model) if self.run.get("embedder") else None
        client = LLMClient(
            provider=ReplayProvider(self, name),
            provider_name=name,
            settings=settings,
            tracker=tracker,
            embedder=embedder,
            trace=trace,
        )
        if "llm_local" in self.run:  # priced as where the recorded calls went
            client.prices.local = bool(self.run["llm_local"])
        return client

    def search(self) -> ReplaySearch:
        return ReplaySearch(self, str(self.run.get("search") or "replay"))

    def reader(self) -> ReplayReader:
        return ReplayReader(self)

    def sandbox(self) -> ReplaySandbox | None:
        return ReplaySandbox(self) if self.run.get("sandbox") else None


def _started_at(run: dict[str, Any], directory: Path) -> datetime:
    try:
        return datetime.fromisoformat(str(run["started_at"]))
    except (KeyError, ValueError):
        raise CassetteMiss(f"{directory}: run.json has no valid started_at") from None


class ReplayProvider:
    def __init__(self, player: Player, name: str) -> None:
        self.player = player
        self.name = name

    async def complete(self, request: CompletionRequest) -> Completion:
        line = self.player.answer("llm", calls.llm_request(request))
        if "error" in line:
            raise calls.load_error(line["error"])
        return Completion.model_validate(line["response"])

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class ReplayEmbedder:
    """`model`: this run's embedding model (a changed one is a miss); None: the
    recorded one."""

    def __init__(self, player: Player, model: str | None = None) -> None:
        self.player = player
        self.model = model

    async def embed_with_usage(self, texts: Sequence[str]) -> Embeddings:
        model = self.model or _embedding_model(self.player)
        line = self.player.answer("embed", calls.embed_request(model, list(texts)))
        if "error" in line:
            raise calls.load_error(line["error"])
        response = line["response"]
        return Embeddings(response["vectors"], response.get("prompt_tokens"))

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return (await self.embed_with_usage(texts)).vectors


def _embedding_model(player: Player) -> str:
    lines = player.tables["embed"]._lines
    return str((lines[0].get("request") or {}).get("model", "")) if lines else ""


class ReplaySearch:
    def __init__(self, player: Player, name: str) -> None:
        self.player = player
        self.name = name

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        try:
            line = self.player.answer("search", calls.search_request(query))
        except CassetteMiss:
            if self.player.lenient:
                return []  # re-scoring: a search the recording never made finds nothing
            raise
        if "error" in line:
            raise calls.load_error(line["error"])
        return [SearchResult.model_validate(r) for r in line["response"]["results"]]


class ReplayReader:
    """A read not in the cassette fails like a dead link; whether that ends the run
    is decided at the end (`Player.first_miss`): only if the run used the page."""

    def __init__(self, player: Player) -> None:
        self.player = player

    async def read(self, url: str) -> Page | ReadFailure:
        try:
            line = self.player.answer("read", calls.read_request(url))
        except CassetteMiss as exc:
            return ReadFailure(url=url, kind="network", detail=str(exc)[:200])
        if "error" in line:
            raise calls.load_error(line["error"])
        response = line["response"]
        if "failure" in response:
            return ReadFailure.model_validate(response["failure"])
        return Page.model_validate(response["page"])


class ReplaySandbox:
    def __init__(self, player: Player) -> None:
        self.player = player

    def availability(self) -> tuple[bool, str]:
        try:
            response = self.player.answer("sandbox", dict(calls.AVAILABILITY))["response"]
        except CassetteMiss:
            return False, "not in the cassette"
        return bool(response["usable"]), str(response["reason"])

    async def run(self, code: str, data: dict[str, Any]) -> SandboxResult:
        from deepsearch.sandbox.runner import SandboxResult

        line = self.player.answer("sandbox", calls.sandbox_request(code, data))
        return SandboxResult.model_validate(line["response"])


def replay_deps(
    deps: AgentDeps, directory: Path, *, lenient: bool = False, secrets: Iterable[str] = ()
) -> Player:
    """Answer every outside call of `deps` from `directory` (replacing its clients in
    place; the LLM client keeps its settings and tracker but gets the cassette's
    provider and embedder)."""
    player = Player(directory, lenient=lenient, secrets=secrets)
    deps.llm.provider = ReplayProvider(player, deps.llm.provider_name)
    deps.llm.embedder = ReplayEmbedder(player) if player.run.get("embedder") else None
    deps.search = player.search()
    deps.reader = player.reader()
    if deps.sandbox is not None or player.run.get("sandbox"):
        deps.sandbox = player.sandbox()
    deps.clock = player.clock
    return player
