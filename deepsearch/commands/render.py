"""Rich output: the answer on stdout (the live view on stderr is in live.py).

rich (with its markdown renderer, markdown-it and pygments: ~0.2 s of CPU to import)
is imported only to render an answer on a terminal; `--json` and a piped answer are
plain writes, without rich (issue 21; `output.plain_stream` says what is piped)."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any

from deepsearch.frontend.output import clean_line, display_path, paths_in_text, plain_stream
from deepsearch.frontend.units import tokens

if TYPE_CHECKING:
    from rich.console import Console

    from deepsearch.agent.result import ResearchResult


def _short(text: str, limit: int) -> str:
    text = " ".join(clean_line(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def print_answer(result: ResearchResult, *, as_json: bool) -> None:
    """The one thing on stdout: the answer (markdown) or the JSON object."""
    if as_json:
        sys.stdout.write(result.json_text() + "\n")
        sys.stdout.flush()
        return
    if not result.answer:
        return  # stdout carries answers only; the stderr summary says what happened
    text = answer_markdown(result)
    if not plain_stream(sys.stdout):  # else rich would not draw: it is not imported
        from rich.console import Console

        out = Console(highlight=False)
        if out.is_terminal:
            _print_rendered(out, result, text)
            return
    sys.stdout.write(paths_in_text(text, markdown=True).rstrip() + "\n")
    sys.stdout.flush()


def _print_rendered(out: Console, result: ResearchResult, text: str) -> None:
    """The answer as rendered markdown, then its sources, on a terminal."""
    from rich.markdown import Markdown
    from rich.text import Text

    body, definitions = split_definitions(paths_in_text(text, markdown=True))
    out.print(Markdown(not_a_list(body)))
    if result.references:
        out.print()
        out.print(Text("Sources", style="bold"))
        for index, ref in enumerate(result.references, start=1):
            line = Text()
            line.append(f"[{index}] ", style="bold cyan")
            line.append(f'"{_short(ref.quote, 200)}"', style="italic")
            where = display_path(ref.url)
            line.append(f" — {ref.title or where}\n    ")
            line.append(where, style=f"link {ref.url}")
            out.print(line)
    elif definitions:
        out.print(definitions)


_ITEM = re.compile(r"^(\s{0,3}\d{1,9})([.)])(\s|$)")


def not_a_list(body: str) -> str:
    """An answer that opens with a number and a full stop (`35. That is ...`, `1986.`)
    is a sentence, not the first item of a numbered list: its marker is escaped unless
    another item follows (a real list, `1. ...` then `2. ...`)."""
    lines = body.split("\n")
    if not lines or not _ITEM.match(lines[0]):
        return body
    following = next((line for line in lines[1:] if line.strip()), "")
    if _ITEM.match(following):
        return body
    lines[0] = _ITEM.sub(r"\1\\\2\3", lines[0], count=1)
    return "\n".join(lines)


def split_definitions(text: str) -> tuple[str, str]:
    """Separate the answer body from its trailing `[^n]: ...` definition lines."""
    lines = text.rstrip().splitlines()
    cut = len(lines)
    while cut > 0 and (lines[cut - 1].startswith("[^") or not lines[cut - 1].strip()):
        cut -= 1
    body = "\n".join(lines[:cut])
    # Rich renders [^n] literally; show markers as plain superscript-like brackets.
    return re.sub(r"\[\^(\d+)\]", r"[\1]", body), "\n".join(lines[cut:]).strip()


UNVERIFIED = "*Unverified: the run was interrupted before this answer was checked.*"


def answer_markdown(result: ResearchResult) -> str:
    """The answer text; reference definitions are already appended by the finalizer.
    An interrupted run's answer (the candidate being evaluated, or one not yet
    finalized) is printed under a line saying it is unverified."""
    text = result.answer or "(no answer)"
    if result.status == "interrupted" and result.answer:
        return f"{UNVERIFIED}\n\n{text}"
    return text


STATUS_WORDS = {"not_found": "not found"}


def cost_words(cost: float | None, limit: float | None, estimated: bool) -> str:
    """ "$0.0012" (of a limit: "$0.0012 of $0.0015"), "~" when tokens were estimated;
    "cost unknown" when a model has no price."""
    from deepsearch.llm.tracker import usd

    if cost is None:
        return "cost unknown"
    text = ("~" if estimated else "") + usd(cost)
    return text + (f" of {usd(limit)}" if limit is not None else "")


def summary_line(result: ResearchResult) -> str:
    usage: dict[str, Any] = result.usage.model_dump()
    steps = len(result.steps)
    status = STATUS_WORDS.get(result.status, result.status)
    line = (
        f"{status} in {steps} step{'' if steps == 1 else 's'}, {result.elapsed_s:.1f}s, "
        f"{tokens(usage['total_tokens'])}/{tokens(usage['budget'])} tokens"
    )
    line += ", " + cost_words(result.usage.cost_usd, result.usage.max_cost, result.usage.estimated)
    if result.confidence_basis is not None and result.status not in ("failed", "interrupted"):
        line += f", confidence {result.confidence:.2f}"
    return line
