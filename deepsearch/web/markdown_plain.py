"""Markdown -> the plain text the LLM reads, plus the links the markdown carried.

Used for text/markdown bodies, Jina's markdown, corpus .md files and by callers that
still hold markdown. The output has one block per line (heading, paragraph, list
item, table row, code line), table cells separated by " | ", no link targets (the
anchor text stays), no emphasis markers and no backslash escapes: a quote taken from
it is verbatim what a reader of the page sees.
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
_REF_DEF = re.compile(r"^\s{0,3}\[([^\]]+)\]:\s*<?(\S+?)>?(?:\s+[\"'(].*)?\s*$")
# [text](target "title"), one level of nested brackets in the text, parens in the target
_LINK = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^()\s>]*(?:\([^()\s]*\)[^()\s>]*)*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
_REF_LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\[([^\]]*)\]")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^\s<>]+)>")
# Left to right, an escape before a code span: "\`\`quote''" has no code span in it.
_ESCAPE_OR_CODE = re.compile(r"\\([!-/:-@\[-`{-~])|(`+)(.+?)\2", re.S)
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EM_STAR = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])")
_EM_UNDER = re.compile(r"(?<![\w_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
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


def _blocks(lines: list[str], refs: dict[str, str], links: list[tuple[str, str]]) -> list[str]:
    out: list[str] = []
    paragraph: list[str] = []
    fence: str | None = None
    in_table = False
    rule_row = -1  # index of a table's --- row, skipped
    quoted = False  # a quote starts its own block, so does the first line after one

    def flush() -> None:
        if paragraph:
            out.append(_inline(" ".join(paragraph), links, refs))
            paragraph.clear()

    for index, raw in enumerate(lines):
        line = raw.rstrip()
        if index == rule_row:
            continue
        opener = _FENCE.match(line)
        if fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = None
            elif line.strip():
                out.append(line)  # code is kept verbatim
            continue
        if opener:
            flush()
            fence = opener.group(1)
            continue
        stripped = _QUOTE.sub("", line)
        if (stripped != line) != quoted:
            flush()
            quoted = stripped != line
        if in_table and "|" in stripped:
            cells = [_inline(cell, links, refs) for cell in _table_row(stripped)]
            out.append(" | ".join(cells))
            continue
        in_table = False
        if not stripped.strip() or _REF_DEF.match(stripped):
            flush()
        elif _RULE.match(stripped) or (_SETEXT.match(stripped) and not paragraph):
            flush()
        elif _SETEXT.match(stripped):
            flush()  # the paragraph above was a setext heading: it stays its own line
        elif _is_table(lines, index) and not _TABLE_RULE.match(stripped):
            flush()
            cells = [_inline(cell, links, refs) for cell in _table_row(stripped)]
            out.append(" | ".join(cells))
            in_table, rule_row = True, index + 1
        elif heading := _HEADING.match(stripped):
            flush()
            out.append(_inline(heading.group(1), links, refs))
        elif bullet := _BULLET.match(stripped):
            flush()
            paragraph.append(stripped[bullet.end() :])
        else:
            paragraph.append(stripped.strip())
    flush()
    return [block for block in out if block.strip()]


def markdown_to_plain_with_links(
    markdown: str, base_url: str | None = None
) -> tuple[str, list[tuple[str, str]]]:
    """(plain text, [(anchor, url)]) of a markdown document; URLs absolute when base_url."""
    text = _FRONT_MATTER.sub("", markdown.replace("\r\n", "\n").replace("\r", "\n"))
    lines = text.split("\n")
    refs = {m.group(1).strip().lower(): m.group(2) for m in map(_REF_DEF.match, lines) if m}
    found: list[tuple[str, str]] = []
    plain = "\n".join(_blocks(lines, refs, found))
    links: list[tuple[str, str]] = []
    seen: set[str] = set()
    for anchor, target in found:
        url = urljoin(base_url, target) if base_url else target
        if urlsplit(url).scheme in ("http", "https") and url not in seen:
            seen.add(url)
            links.append((_inline(anchor, [], refs)[:200], url))
    return plain, links


def markdown_to_plain(markdown: str) -> str:
    """Plain text of markdown: anchor text without targets, no syntax, one block a line."""
    return markdown_to_plain_with_links(markdown)[0]
