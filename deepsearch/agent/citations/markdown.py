"""Markdown repair for the final answer (pure string functions).

`repair_markdown` chains them: unwrap a fence around the whole answer, drop an
unmatched (stray) fence line, convert
HTML tables, drop stray `<br>`/`<hr>`/`<center>` outside tables, make `[url](url)`
links readable, drop the replacement character. Footnote markers are left alone:
the reference builder strips the model's and anchors its own.
Fenced code blocks are left untouched by every step except the unwrapping.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote, urlsplit

_WRAPPING_FENCE = re.compile(
    r"^\s*(```|~~~)[ \t]*(?:markdown|md|html|text)?[ \t]*\n(?P<body>.*)\n[ \t]*\1[ \t]*\s*$",
    re.DOTALL | re.IGNORECASE,
)
_CODE_BLOCK = re.compile(r"^(```|~~~)[^\n]*\n.*?^\1[ \t]*$", re.DOTALL | re.MULTILINE)
_TABLE = re.compile(r"<table\b.*?</table\s*>", re.DOTALL | re.IGNORECASE)
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
_HR = re.compile(r"^[ \t]*<hr\s*/?>[ \t]*$|<hr\s*/?>", re.IGNORECASE | re.MULTILINE)
_CENTER = re.compile(r"</?center\s*>", re.IGNORECASE)
_URL_LINK = re.compile(r"\[(?P<text>https?://[^\]\s]+)\]\((?P<url>https?://[^)\s]+)\)")


def outside_code(text: str, fn: Callable[[str], str]) -> str:
    """Apply `fn` to the parts of `text` that are not fenced code blocks."""
    out, last = [], 0
    for match in _CODE_BLOCK.finditer(text):
        out.append(fn(text[last : match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(fn(text[last:]))
    return "".join(out)


def unwrap_fence(text: str) -> str:
    """```markdown ... ``` around the whole answer -> its body (a single code
    block in another language, e.g. ```python, is left alone)."""
    match = _WRAPPING_FENCE.match(text)
    if not match:
        return text
    body = match.group("body")
    # An inner fence opening means the "wrapper" was really two code blocks.
    if re.search(r"^\s*(```|~~~)", body, re.MULTILINE) and body.count("```") % 2:
        return text
    return body.strip("\n")


_FENCE_LINE = re.compile(r"^[ \t]*(```|~~~)")


def drop_stray_fence(text: str) -> str:
    """An odd number of fence lines leaves the rest of the answer inside a code
    block (and uncitable): the last fence line, the unmatched one, goes."""
    lines = text.split("\n")
    fences = [i for i, line in enumerate(lines) if _FENCE_LINE.match(line)]
    if len(fences) % 2 == 0:
        return text
    del lines[fences[-1]]
    return "\n".join(lines)


def _readable_label(url: str) -> str:
    parts = urlsplit(url)
    host = (parts.hostname or url).removeprefix("www.")
    path = unquote(parts.path).strip("/")
    if not path:
        return host
    label = f"{host}/{path}"
    return label if len(label) <= 40 else label[:39] + "…"


def readable_links(text: str) -> str:
    """`[https://x/y](https://x/y)` -> `[host/path…](url)`."""

    def repl(match: re.Match[str]) -> str:
        url = match.group("url")
        return f"[{_readable_label(url)}]({url})"

    return outside_code(text, lambda part: _URL_LINK.sub(repl, part))


def _cell(element: object) -> str:
    text = " ".join(element.text_content().split())  # type: ignore[attr-defined]
    return text.replace("|", "\\|")


def html_table_to_markdown(html: str) -> str:
    """One <table> as a GFM table; the input unchanged when it cannot be parsed."""
    from lxml import etree
    from lxml import html as lxml_html

    try:
        table = lxml_html.fragment_fromstring(html)
    except (etree.ParserError, ValueError):
        return html
    rows = [[_cell(c) for c in tr.xpath("./th|./td")] for tr in table.xpath(".//tr")]
    rows = [r for r in rows if r]
    if not rows:
        return html
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    lines.extend("| " + " | ".join(r) + " |" for r in rows[1:])
    return "\n".join(lines)


def html_tables_to_markdown(text: str) -> str:
    if "<table" not in text.lower():
        return text

    def repl(match: re.Match[str]) -> str:
        table = html_table_to_markdown(match.group(0))
        return match.group(0) if table == match.group(0) else f"\n{table}\n"

    return outside_code(text, lambda part: _TABLE.sub(repl, part))


def clean_html_breaks(text: str) -> str:
    """`<br>` becomes a newline and `<hr>`/`<center>` go, except inside table rows
    (GFM cells may use `<br>` for line breaks)."""

    def fix(part: str) -> str:
        lines = []
        for line in part.split("\n"):
            if not line.lstrip().startswith("|"):
                line = _CENTER.sub("", _HR.sub("", _BR.sub("\n", line)))
            lines.append(line)
        return "\n".join(lines)

    return outside_code(text, fix)


def repair_markdown(text: str) -> str:
    """The whole repair chain; footnote markers are left to the reference builder."""
    text = drop_stray_fence(unwrap_fence(text))
    text = html_tables_to_markdown(text)
    text = clean_html_breaks(text)
    text = readable_links(text)
    text = text.replace("\ufffd", "")
    text = outside_code(text, lambda part: re.sub(r"\n{3,}", "\n\n", part))
    return text.strip() + "\n"


def length_guard(original: str, edited: str, min_ratio: float = 0.85) -> str:
    """The edited text only if it kept at least `min_ratio` of the original length."""
    if not edited.strip():
        return original
    return edited if len(edited.strip()) >= min_ratio * len(original.strip()) else original
