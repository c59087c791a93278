"""Cassettes: record every outside call of a run, and replay the run from them.

API (stable; `deepsearch eval --replay-from` builds on it):

    from deepsearch.cassettes import CassetteSpec, CassetteMiss, Recorder, Player,
        record_deps, replay_deps, load_result

    # The CLI's way (what --record / --replay / --replay-lenient do):
    spec = CassetteSpec(mode="record" | "replay" | "lenient", directory=Path(DIR))
    session = runtime.open_cassette(spec, settings)      # Recorder | Player (None: no spec)
    deps = await runtime.build_deps(settings, stack=..., emit=..., trace=...,
                                    cassette=session, question=question)
    result = await ResearchRun(question, deps, options).run()
    result = runtime.finish_cassette(session, result)  # record: writes result.json;
                                                     # replay: a miss -> failed, exit 1
    # (run_research calls finish_cassette for cut-short results too)

    # On deps you built yourself (tests, fakes); build the ResearchRun afterwards,
    # it reads deps.clock:
    recorder = record_deps(deps, DIR, secrets=[...])   # wraps deps' clients in place
    recorder.write_result(result)
    player = replay_deps(deps, DIR, lenient=False)     # replaces deps' clients in place
    player.first_miss(result.visited_urls)             # str | None: the miss that mattered
    load_result(DIR)                                   # the recorded --json object or None
    rewrite(DIR, {"http://127.0.0.1:41234": "http://127.0.0.1:8765"})  # text, keys redone

`CassetteMiss` is a fatal `RunError` (exit 1): "llm call for tool 'agent' not in
cassette: messages[0].content differs from the nearest recorded request".

Layout of DIR (safe to commit: secrets redacted with the --trace rule):
    run.json      format, version, started_at, question, provider, search, embedder,
                  sandbox, options (the research options that shape the prompts)
    result.json   the run's --json result
    llm.jsonl     one line per LLM call: {"key", "n", "request", "response"|"error"}
    search.jsonl  embed.jsonl  read.jsonl  sandbox.jsonl  (same shape)

Matching. `key` hashes the canonical request (sorted-key JSON): for an LLM call the
tool, model, temperature, system prompt, messages, JSON schema and its name (not
the budget-derived output cap); a search's query object; a read's URL; an
embedding call's model and texts; a sandbox run's code and data. Strict replay
matches by key, never by order, because calls run concurrently; `n` numbers
identical requests in the order they were made and they replay in that order
(searches, reads and sandbox runs, which repeat, answer with their last recording
past the recorded count). Lenient replay answers by key when it matches, else
with the next unused recording of the same kind (per tool for LLM calls), in
recorded order; a search beyond the recording finds nothing, a read of an
unrecorded URL fails, and only running out of LLM calls ends the run.

The clock. Recording and replay freeze the wall clock at the recorded start
(`started_at`): the date/time line of the prompts is the same in both; elapsed
times and timeouts stay real. A read missing from the cassette fails like a dead
link and ends the run (at its end) only if the run visited that URL: a background
prefetch that the timing of one run started and the other did not is harmless.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from deepsearch.cassettes.record import FrozenClock, Recorder, record_deps
from deepsearch.cassettes.replay import Player, replay_deps
from deepsearch.cassettes.store import CassetteMiss, load_result, load_run, rewrite

CassetteMode = Literal["record", "replay", "lenient"]


@dataclass(frozen=True)
class CassetteSpec:
    mode: CassetteMode
    directory: Path
    # Recording only: the wall-clock start the run sees (default: now). A fixed one
    # makes re-recordings byte-identical where the calls are (tests/pocket).
    started_at: datetime | None = None


__all__ = [
    "CassetteMiss",
    "CassetteMode",
    "CassetteSpec",
    "FrozenClock",
    "Player",
    "Recorder",
    "load_result",
    "load_run",
    "record_deps",
    "replay_deps",
    "rewrite",
]
