"""What counts as the same text when citing: verbatim spans, numbers, markers.

"Verbatim" means a span of the source's own text -- the reader's plain page text
or the snippet -- with whitespace normalised and nothing else changed: no markdown
is reduced or unescaped, so a quote can never carry a character (a markdown escape,
a link target) that is not on the page.

A quote supports a sentence only if it carries every number the sentence states
(years included, thousands separators ignored: "330 metres" never supports
"500 metres") and, with the lexical backend, half its content words.

Markers the LLM wrote itself are removed by `strip_markers`: caret forms (`[^1]`,
`[^ 1]`, `[1^]`, `[^1, ^2]`) wherever they stand, including glued to a word, in runs
(`[^1][^2]`) and in CJK text; plain `[1]`/`[1, 2]` runs unless glued to an ASCII word
character (`arr[1]`) or followed by `(`/`:` (links, definitions); and any definition
lines it wrote.
"""

from __future__ import annotations

import re

from deepsearch.text import numbers_in

_FENCE = re.compile(r"^\s*(```|~~~)")
_DEFINITION = re.compile(r"^\s*\[\^?\s*\d{1,3}\s*\^?\]:")
# One number list inside brackets: "1", "1, 2", "^1, ^2", "1^".
_NUMS = r"\s*\d{1,3}\s*\^?(?:\s*,\s*\^?\s*\d{1,3}\s*\^?)*\s*"
_CARET_GROUP = rf"\[\^{_NUMS}\]|\[\s*\d{{1,3}}\s*\^\s*\]"
_PLAIN_GROUP = r"\[\s*\d{1,3}(?:\s*,\s*\d{1,3})*\s*\]"
# A run of marker groups ("[^1][2]", "[1] [^2]") is judged as a whole: with a caret
# form in it, it is a citation wherever it stands (glued, CJK); plain-only, it is
# code-ish text when glued to an ASCII word character ("arr[1][2]"), a link or a
# definition when followed by "(" or ":"; four digits ("[2020]") are a year.
_RUN = re.compile(
    rf"(?P<lead>[ \t]*)(?P<run>(?:{_CARET_GROUP}|{_PLAIN_GROUP})"
    rf"(?:[ \t]*(?:{_CARET_GROUP}|{_PLAIN_GROUP}))*)(?P<next>[(:\[]?)"
)
_HAS_CARET = re.compile(r"\^")


def normalize_ws(text: str) -> str:
    return " ".join(text.split())


def is_verbatim(quote: str, source: str) -> bool:
    """`quote` is a span of `source` (both whitespace-normalised)."""
    q = normalize_ws(quote)
    return bool(q) and q in normalize_ws(source)


def numbers_supported(sentence: str, quote: str) -> bool:
    """Every number the sentence states also stands in the quote (`deepsearch.text`)."""
    return numbers_in(sentence) <= numbers_in(quote)


# With the lexical backend a quote must also carry at least this share of the sentence's
# content words (inflections allowed): similarity alone let a quote that only shares the
# place names ("Leland ... North Carolina") "support" a claim about a film shot there.
MIN_WORD_COVERAGE = 0.5


def _drop_run(match: re.Match[str]) -> str:
    if _HAS_CARET.search(match.group("run")):
        return match.group("next")
    before = match.string[match.start() - 1] if match.start() and not match.group("lead") else ""
    glued = bool(before) and before.isascii() and (before.isalnum() or before in "_]")
    if glued or match.group("next"):
        return match.group(0)
    return ""


def strip_markers(answer: str) -> str:
    """Remove citation markers and definition lines the LLM wrote (outside code)."""
    out, fenced = [], False
    for line in answer.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            if _DEFINITION.match(line):
                continue
            stripped = _RUN.sub(_drop_run, line)
            opening = _RUN.match(line)
            if opening and not _drop_run(opening):
                stripped = stripped.lstrip(" \t")  # a marker that opened the line
            line = stripped
        out.append(line)
    return "".join(out).rstrip() + ("\n" if answer.endswith("\n") else "")
