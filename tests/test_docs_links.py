"""The README and docs/ hold together: every relative link in them resolves (the file,
and a `#section` of a markdown file), and every docs/ page is linked from the README."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# [text](target) outside code: the target up to a space or the closing parenthesis.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", flags=re.S)
CODE = re.compile(r"`[^`\n]*`")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return LINK.findall(text)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in _links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check offline
            continue
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in _links(ROOT / "README.md")}
    assert {p.resolve() for p in DOCS.glob("*.md")} - linked == set()


def test_the_check_sees_a_broken_link_and_a_missing_section(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## A section\n", "utf-8")
    page.write_text(
        "[ok](other.md#a-section) [gone](missing.md) [no such](other.md#nowhere)\n"
        "`[in code](missing.md)` [web](https://example.org/x)\n",
        "utf-8",
    )
    assert broken_links(page) == ["missing.md", "other.md#nowhere"]
