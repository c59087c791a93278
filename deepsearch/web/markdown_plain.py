"""Markdown -> the plain text the LLM reads, plus the links the markdown carried.

Used for text/markdown bodies, Jina's markdown, corpus .md files and by callers that
still hold markdown. The output has the shape of the HTML reader's text: each block
(heading, paragraph, list, table, code block) separated by a blank line; inside a
block one line per paragraph, list item ("- item"), table row ("| a | b |") or code
line. No link targets (the anchor text stays), no emphasis markers and no backslash
escapes: a quote taken from it is verbatim what a reader of the page sees.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s+|$)(.*?)(?:\s+#+)?\s*$")
_SETEXT = re.compile(r"^\s{0,3}(?:=+|-+)\s*$")
_RULE = re.compile(r"^\s{0,3}(?:(?:\*\s*){3,}|(?:-\s*){3,}|(?:_\s*){3,})$")
_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_PIPE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_REF_DEF = re.compile(r"^\s{0,3}\[([^\]]+)\]:\s*<?(\S+?)>?(?:\s+[\"'(].*)?\s*$")
# [text](target "title"), one level of nested brackets in the text, parens in the target
_LINK = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^()\s>]*(?:\([^()\s]*\)[^()\s>]*)*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
_REF_LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\[([^\]]*)\]")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^\s<>]+)>")
# Emphasis is looked for within 300 characters, code spans within 1200: an unbounded
# lazy match made a long line of unmatched "*" quadratic (seconds per paragraph).
# Left to right, an escape before a code span: "\`\`quote''" has no code span in it.
_ESCAPE_OR_CODE = re.compile(r"\\([!-/:-@\[-`{-~])|(`+)(.{1,1200}?)\2", re.S)
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.{1,300}?)(?<=\S)\1")
_EM_STAR = re.compile(r"(?<![\w*])\*(?=[^\s*])(.{1,300}?)(?<=[^\s*])\*(?![\w*])")
_EM_UNDER = re.compile(r"(?<![\w_])_(?=[^\s_])(.{1,300}?)(?<=[^\s_])_(?![\w_])")
_STRIKE = re.compile(r"~~(?=\S)(.{1,300}?)(?<=\S)~~")
_BREAK_TAG = re.compile(r"<br\s*/?>", re.I)
_SPACES = re.compile(r"[ \t\u00a0]+")


def _inline(text: str, links: list[tuple[str, str]], refs: dict[str, str]) -> str:
    """Inline markdown -> text; every link target goes to `links`, never into the text."""
    spans: list[str] = []

    def protect(match: re.Match[str]) -> str:
        if match.group(1) is not None:  # an escaped character: literal, never syntax
            spans.append(match.group(1))
        else:  # a code span: verbatim, backslashes included
            spans.append(match.group(3).strip() or match.group(3))
        return f"\x00{len(spans) - 1}\x00"

    def restore(part: str) -> str:
        return re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], part)

    def link(match: re.Match[str]) -> str:
        if match.group(1):
            return ""  # an image: its address is no text, its alt rarely reads as prose
        links.append((restore(match.group(2)), restore(match.group(3))))
        return match.group(2)

    def ref_link(match: re.Match[str]) -> str:
        anchor = match.group(2)
        target = refs.get(restore(match.group(3) or anchor).strip().lower())
        if target is None:
            return match.group(0)
        if match.group(1):
            return ""
        links.append((restore(anchor), target))
        return anchor

    text = _ESCAPE_OR_CODE.sub(protect, text.replace("\x00", ""))
    text = _BREAK_TAG.sub(" ", text)
    for _ in range(2):  # an image inside a link: [![alt](img)](target)
        text = _LINK.sub(link, text)
    text = _REF_LINK.sub(ref_link, text)
    text = _AUTOLINK.sub(lambda m: m.group(1), text)
    text = _STRIKE.sub(r"\1", _STRONG.sub(r"\2", text))
    text = _EM_UNDER.sub(r"\1", _EM_STAR.sub(r"\1", text))
    text = restore(text)
    return _SPACES.sub(" ", text).strip()


def table_row(cells: list[str]) -> str:
    """One table row a line: '| a | b |' (a pipe inside a cell becomes '¦')."""
    return "| " + " | ".join(cell.replace("|", "¦") for cell in cells) + " |"


def _table_row(line: str) -> list[str]:
    row = line.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)]


def _is_table(lines: list[str], index: int) -> bool:
    """A GFM table starts with a row of pipes followed by a --- rule row."""
    return (
        "|" in lines[index]
        and index + 1 < len(lines)
        and bool(_TABLE_RULE.match(lines[index + 1]))
        and "-" in lines[index + 1]
    )


class _Blocks:
    """Line-by-line markdown reader collecting (kind, text) blocks.

    Kinds "row" (table row), "item" (list item) and "code" (a code line) run on
    consecutive lines; every other block is separated from its neighbours by a blank line.
    """

    def __init__(self, lines: list[str], refs: dict[str, str]) -> None:
        self.lines = lines
        self.refs = refs
        self.links: list[tuple[str, str]] = []
        self.out: list[tuple[str, str]] = []
        self.paragraph: list[str] = []
        self.paragraph_kind = "block"
        self.fence: str | None = None
        self.in_table = False
        self.rule_row = -1  # index of a table's --- row, skipped
        self.quoted = False  # a quote starts its own block, so does the line after one

    def inline(self, text: str) -> str:
        return _inline(text, self.links, self.refs)

    def flush(self) -> None:
        if self.paragraph:
            text = self.inline(" ".join(self.paragraph))
            prefix = "- " if self.paragraph_kind == "item" else ""
            self.out.append((self.paragraph_kind, prefix + text))
            self.paragraph.clear()

    def add_row(self, line: str) -> None:
        self.out.append(("row", table_row([self.inline(c) for c in _table_row(line)])))

    def in_code(self, line: str, opener: re.Match[str] | None) -> bool:
        """Fence handling; True when the line belonged to (or opened) a code block."""
        if self.fence is not None:
            closing = opener and opener.group(1)[0] == self.fence[0]
            if closing and len(opener.group(1)) >= len(self.fence):  # type: ignore[union-attr]
                self.fence = None
            elif line.strip():
                self.out.append(("code", line))  # code is kept verbatim
            return True
        if opener:
            self.flush()
            self.fence = opener.group(1)
            return True
        return False

    def feed(self, index: int, line: str) -> None:
        if index == self.rule_row or self.in_code(line, _FENCE.match(line)):
            return
        stripped = _QUOTE.sub("", line)
        if (stripped != line) != self.quoted:
            self.flush()
            self.quoted = stripped != line
        if self.in_table and "|" in stripped:
            self.add_row(stripped)
            return
        self.in_table = False
        self.feed_block(index, stripped)

    def feed_block(self, index: int, stripped: str) -> None:
        if not stripped.strip() or _REF_DEF.match(stripped) or _RULE.match(stripped):
            self.flush()
        elif _SETEXT.match(stripped):
            self.flush()  # a setext heading's text above stays its own block
        elif _is_table(self.lines, index) and not _TABLE_RULE.match(stripped):
            self.flush()
            self.add_row(stripped)
            self.in_table, self.rule_row = True, index + 1
        elif _PIPE_ROW.match(stripped):
            self.flush()  # a row without a rule row: our own plain text read again
            self.add_row(stripped)
        elif heading := _HEADING.match(stripped):
            self.flush()
            self.out.append(("block", self.inline(heading.group(1))))
        elif bullet := _BULLET.match(stripped):
            self.flush()
            self.paragraph_kind = "item"
            self.paragraph.append(stripped[bullet.end() :])
        else:
            if not self.paragraph:
                self.paragraph_kind = "block"
            self.paragraph.append(stripped.strip())

    def text(self) -> str:
        for index, raw in enumerate(self.lines):
            self.feed(index, raw.rstrip())
        self.flush()
        parts: list[str] = []
        previous = ""
        for kind, block in self.out:
            if not block.strip():
                continue
            if parts:
                parts.append("\n" if kind == previous and kind != "block" else "\n\n")
            parts.append(block)
            previous = kind
        return "".join(parts)


def markdown_to_plain_with_links(
    markdown: str, base_url: str | None = None
) -> tuple[str, list[tuple[str, str]]]:
    """(plain text, [(anchor, url)]) of a markdown document; URLs absolute when base_url."""
    text = _FRONT_MATTER.sub("", markdown.replace("\r\n", "\n").replace("\r", "\n"))
    lines = text.split("\n")
    refs = {m.group(1).strip().lower(): m.group(2) for m in map(_REF_DEF.match, lines) if m}
    blocks = _Blocks(lines, refs)
    plain = blocks.text()
    links: list[tuple[str, str]] = []
    seen: set[str] = set()
    for anchor, target in blocks.links:
        url = urljoin(base_url, target) if base_url else target
        if urlsplit(url).scheme in ("http", "https") and url not in seen:
            seen.add(url)
            links.append((_inline(anchor, [], refs)[:200], url))
    return plain, links


def markdown_to_plain(markdown: str) -> str:
    """Plain text of markdown: anchor text without targets, no syntax, one block a line."""
    return markdown_to_plain_with_links(markdown)[0]
