"""The run history: every run kept in one SQLite file (docs/history.md).

Where: `<data dir>/history.db`, the data dir being `history.dir` (the config key, or
$DEEPSEARCH_DATA_DIR), else the user's data directory (platformdirs: on Linux
$XDG_DATA_HOME/deepsearch, ~/.local/share/deepsearch). `history.enabled: false` or
`--no-history` keeps nothing.

What: the question (as typed and as researched), the result exactly as `--json`
printed it, the run's gathered knowledge and URL list (agent/handover.py), the
settings that shaped it (secrets masked, as `deepsearch config` shows them), timings,
tokens, and a stable `run_id`. No secret: every stored text is passed through
config.redaction with the run's keys.

A file that cannot be written (locked, full, read-only, corrupt) costs the run a
one-line warning (`keep_run` returns it), never the run itself.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepsearch.errors import CommandFailed, UsageError
from deepsearch.history.store import FILE_NAME, HistoryError, HistoryStore, RunRecord

if TYPE_CHECKING:
    from deepsearch.agent.handover import Carryover
    from deepsearch.agent.result import ResearchResult
    from deepsearch.config import Settings

__all__ = [
    "HistoryError",
    "HistoryStore",
    "RunRecord",
    "earlier_run",
    "history_file",
    "keep_run",
    "new_run_id",
    "store_for",
]

# Settings keys not worth keeping with every run: the model tables, eval's own.
_UNKEPT_PREFIXES = ("llm.providers.", "eval.", "keys.")


def history_file(settings: Settings) -> Path:
    if settings.history.dir:
        return Path(settings.history.dir).expanduser() / FILE_NAME
    from platformdirs import user_data_dir

    return Path(user_data_dir("deepsearch", appauthor=False)) / FILE_NAME


def store_for(settings: Settings) -> HistoryStore:
    return HistoryStore(history_file(settings))


def new_run_id(now: datetime) -> str:
    """`20261204-224530-3fa9c1`: sortable by time, unique (random tail), short enough
    to type; a unique prefix names it too (`deepsearch show 20261204-2245`)."""
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def earlier_run(settings: Settings, run_id: str | None) -> Carryover:
    """The run a follow-up continues: `run_id` (or a unique prefix of it), or the
    newest run when None. A run not there is a usage error (exit 2); a history that
    cannot be read, a runtime one (exit 1)."""
    store = store_for(settings)
    try:
        found = store.latest_id() if run_id is None else store.resolve(run_id)
        carry = store.carryover(found) if found is not None else None
    except HistoryError as exc:
        raise CommandFailed(f"cannot read the history: {exc}") from None
    if found is None:
        if run_id is None:
            raise UsageError(f"no earlier run to continue (the history {store.path} has none)")
        raise UsageError(f"no run {run_id!r} in the history ({store.path})")
    if carry is None:
        raise UsageError(f"run {found} kept no knowledge to continue from")
    return carry.model_copy(update={"run_id": found})


def kept_settings(settings: Settings) -> dict[str, Any]:
    """The settings that shaped a run, secrets masked (as `deepsearch config` shows)."""
    from deepsearch.config import LoadedConfig, effective_values

    shown = effective_values(LoadedConfig(settings=settings, sources={}))
    return {key: value for key, (value, _) in shown.items() if not key.startswith(_UNKEPT_PREFIXES)}


def keep_run(
    settings: Settings,
    result: ResearchResult,
    *,
    output_json: str,
    asked: str,
    started_at: datetime,
    finished_at: datetime,
    carry: Carryover | None,
) -> str | None:
    """Keep the run; a one-line warning when the file could not take it (else None)."""
    from deepsearch.config import redact_secrets

    keys = settings.keys.secret_values()

    def clean(text: str) -> str:
        return redact_secrets(text, keys)

    record = RunRecord(
        run_id=result.run_id or "",
        started_at=started_at.isoformat(timespec="seconds"),
        finished_at=finished_at.isoformat(timespec="seconds"),
        question=clean(result.question),
        asked=clean(asked),
        status=result.status,
        total_tokens=result.usage.total_tokens,
        budget=result.usage.budget,
        elapsed_s=result.elapsed_s,
        continued_from=result.continued_from,
        output_json=clean(output_json),
        settings=kept_settings(settings),
    )
    if carry is not None and keys:
        carry = type(carry).model_validate_json(clean(carry.model_dump_json()))
    try:
        store_for(settings).record(record, carry)
    except HistoryError as exc:
        return f"run not kept in the history: {exc}"
    return None
