"""What the latency benchmark computes from a run: the critical path of the
simulated waits, and the composition of the agent's prompts.

Critical path: the measure of the union of every simulated wait (LLM, search,
page), i.e. the time during which at least one outside call was pending. A run
with no overhead at all would take exactly that long. LLM calls on the critical
path: the number of maximal groups of overlapping LLM waits, so calls that run
concurrently count once (they cost one wait), calls one after another count each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from urllib.parse import unquote, urlsplit

from bench.latency_servers import Wait
from deepsearch.llm.tokens import count_tokens

PARTS = (
    "page evidence",
    "search snippets",
    "other knowledge",
    "diary",
    "URL list",
    "question and queries",
    "instructions",
)
_BLOCKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("page evidence", re.compile(r'<knowledge-\d+ type="url".*?</knowledge-\d+>', re.S)),
    ("search snippets", re.compile(r'<knowledge-\d+ type="side-info".*?</knowledge-\d+>', re.S)),
    ("other knowledge", re.compile(r"<knowledge-\d+ type=.*?</knowledge-\d+>", re.S)),
    ("diary", re.compile(r"<diary>.*?</diary>", re.S)),
    # a numbered URL line and its indented title/snippet line(s)
    ("URL list", re.compile(r"^\[\d+\] [^\n]*https?://[^\n]*(?:\n {4}[^\n]*)*", re.M)),
    (
        "question and queries",
        re.compile(
            r"<(original-question|current-question|queries-done|open-sub-questions)>.*?</\1>", re.S
        ),
    ),
)


def merged(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def union_s(waits: Sequence[Wait]) -> float:
    """Seconds during which at least one wait was pending."""
    return sum(end - start for start, end in merged((w.start, w.end) for w in waits))


def llm_rounds(waits: Sequence[Wait]) -> int:
    """LLM calls on the critical path: overlapping LLM waits count once."""
    return len(merged((w.start, w.end) for w in waits if w.kind == "llm"))


def composition(prompt: str) -> dict[str, int]:
    """Tokens (o200k_base) of each part of one agent prompt; the rest is instructions."""
    spans: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []
    for part, pattern in _BLOCKS:
        for match in pattern.finditer(prompt):
            start, end = match.span()
            if any(s < end and start < e for s, e in taken):
                continue  # already counted by an earlier, more specific pattern
            spans.append((start, end, part))
            taken.append((start, end))
    tokens = dict.fromkeys(PARTS, 0)
    for start, end, part in spans:
        tokens[part] += count_tokens(prompt[start:end])
    tokens["instructions"] = max(0, count_tokens(prompt) - sum(tokens.values()))
    return tokens


def total_composition(prompts: Iterable[str]) -> dict[str, int]:
    total = dict.fromkeys(PARTS, 0)
    for prompt in prompts:
        for part, n in composition(prompt).items():
            total[part] += n
    return total


def unread_fetches(waits: Sequence[Wait], read_urls: Iterable[str]) -> int:
    """Page requests that did not serve a page the run read (a page read once but
    fetched twice counts its second fetch too)."""
    read = {unquote(urlsplit(u).path).rstrip("/") for u in read_urls}
    served: set[str] = set()
    wasted = 0
    for w in waits:
        if w.kind != "page":
            continue
        path = unquote(urlsplit(w.label).path).rstrip("/")
        if path in read and path not in served:
            served.add(path)
        else:
            wasted += 1
    return wasted
