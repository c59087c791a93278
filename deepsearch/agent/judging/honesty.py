"""Honest outcomes, the rules: which answer a run reports and with what status, the
signals its confidence rests on, and `--min-confidence` turning a weak forced answer
into `not_found`. Plain functions over the run's values; agent/steps/honesty.py reads
them from the state and writes the result.

A run reports, in order: the accepted (or Beast Mode) answer; else the best rejected
candidate (forced) when it says something (`content.answers_something`: no "I don't
know", no `},`); else the model's own "not found" report (not_found); else nothing
(the loop then reports not_found, or failed when an error ended the run). Beast Mode
saying "not found" clears the candidate (see the loop).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from deepsearch.agent.judging.confidence import Checks, ConfidenceBasis, distinct_sources
from deepsearch.agent.judging.content import answers_something
from deepsearch.agent.types import Status

MAX_QUERIES_SHOWN = 5
INSTRUCTED_TAIL = "; treat its claim as unverified"
UNVERIFIED_HEAD = (
    "**Unverified:** the pages this answer rests on carry instructions to AI models "
    "(a sign of manipulation); its claim is not confirmed.\n\n"
)


def reported_answer(
    final: str | None, candidate: str | None, not_found_note: str | None, status: Status
) -> tuple[str | None, Status]:
    """The answer text the run reports and its status (None: there is none)."""
    if final is not None:
        return final, status
    if candidate is not None and answers_something(candidate):
        return candidate, status
    if not_found_note is not None:
        return not_found_note, "not_found"
    return None, status


def confidence_basis(
    status: Status,
    *,
    has_answer: bool,
    trivial: bool,
    uncertain: bool,
    cited_urls: Iterable[str],
    instructed_urls: Iterable[str] = (),
) -> ConfidenceBasis:
    """The run's own signals about the answer it reports (`trivial`: a direct answer,
    accepted without evaluation; `uncertain`: the model flagged it; `instructed_urls`:
    the cited sources whose text carries instructions to the model)."""
    checks: Checks = "none"
    if status == "answered":
        checks = "direct" if trivial else "passed"
    return ConfidenceBasis(
        supported=has_answer and status not in ("not_found", "failed"),
        checks=checks,
        forced=status in ("forced", "interrupted"),
        sources=distinct_sources(cited_urls),
        uncertain=uncertain,
        instructed_sources=distinct_sources(instructed_urls),
    )


def instructed_warning(instructions: Mapping[str, Sequence[str]], *, cited: int) -> str | None:
    """The result's warning when the answer's support (url -> what in it addresses the
    model, judging/injection.py) carries instructions, given `cited` (distinct hosts
    the answer cites; 0: the support is the pages read); None when none does."""
    if not instructions:
        return None
    url, signals = next(iter(instructions.items()))
    quoted = ", ".join(f'"{s}"' for s in signals)
    others = f" (and {len(instructions) - 1} more)" if len(instructions) > 1 else ""
    if not cited:
        rests = "cites no source, and the run read pages that"
    elif distinct_sources(instructions) >= cited:
        rests = "rests only on pages that"
    else:
        rests = "cites pages that"
    return (
        f"the answer {rests} carry instructions to the model: {url}{others} "
        f"says {quoted}{INSTRUCTED_TAIL}"
    )


def without_instructed_warning(answer: str, warnings: list[str]) -> tuple[str, list[str]]:
    """The answer and warnings as before `instructed_warning` was applied: a result is
    judged again once its references are in (its first look had none)."""
    kept = [w for w in warnings if not w.endswith(INSTRUCTED_TAIL)]
    return answer.removeprefix(UNVERIFIED_HEAD), kept


def below_min_confidence(status: Status, value: float, threshold: float) -> bool:
    """A forced answer whose confidence is under `threshold` (`--min-confidence`) is
    reported as not found."""
    return status == "forced" and value < threshold


def what_was_searched(queries: Sequence[str], pages_read: int) -> str:
    """ "Looked for: "q1", "q2"; read 3 pages." — from the run's record, not the model's."""
    shown = queries[:MAX_QUERIES_SHOWN]
    looked = ", ".join(f'"{q}"' for q in shown) if shown else "no searches were run"
    return f"Looked for: {looked}; read {pages_read} page{'' if pages_read == 1 else 's'}."


def not_found_text(note: str, searched: str) -> str:
    """A not-found answer always says what was looked for and what was read (`searched`),
    whatever the model wrote (a bare "I could not find it" tells a reader nothing)."""
    note = note.strip()
    return f"**Not found.** {searched}" + (f"\n\n{note}" if note else "")


def not_confirmed_text(searched: str, value: float, threshold: float) -> str:
    """The head of a forced answer turned not found by `--min-confidence`."""
    return (
        f"**Not found with enough confidence** ({value:.2f}, below --min-confidence "
        f"{threshold:g}). {searched} "
        "The best unconfirmed answer found:\n\n"
    )
