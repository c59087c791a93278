"""Finalizer repair helpers."""

from __future__ import annotations

from deepsearch.agent.citations.markdown import (
    clean_html_breaks,
    drop_stray_fence,
    html_tables_to_markdown,
    length_guard,
    readable_links,
    repair_markdown,
    unwrap_fence,
)


def test_unwrap_fence() -> None:
    assert unwrap_fence("```markdown\n# Hi\ntext\n```") == "# Hi\ntext"
    assert unwrap_fence("```\nplain\n```\n") == "plain"
    assert unwrap_fence("```python\nprint(1)\n```") == "```python\nprint(1)\n```"
    assert unwrap_fence("Intro\n```md\nx\n```") == "Intro\n```md\nx\n```"


def test_readable_links() -> None:
    text = "[https://www.example.com/a/b](https://www.example.com/a/b) and [https://x.io](https://x.io)"
    out = readable_links(text)
    assert out == "[example.com/a/b](https://www.example.com/a/b) and [x.io](https://x.io)"
    long = "https://docs.python.org/3/library/asyncio-task.html#very-long-anchor"
    label = readable_links(f"[{long}]({long})").split("]")[0][1:]
    assert len(label) <= 40 and label.endswith("…")


def test_html_table_to_markdown() -> None:
    html = "Before\n<table><tr><th>Name</th><th>Year</th></tr><tr><td>Eiffel | Tower</td><td>1889</td></tr><tr><td>Only</td></tr></table>\nAfter"
    out = html_tables_to_markdown(html)
    assert "| Name | Year |\n| --- | --- |\n| Eiffel \\| Tower | 1889 |\n| Only |  |" in out
    assert out.startswith("Before") and out.rstrip().endswith("After")
    assert html_tables_to_markdown("<table></table>") == "<table></table>"


def test_breaks_removed_outside_tables_only() -> None:
    text = "line<br>next<hr>\n| a<br>b | c |\n<center>x</center>"
    assert clean_html_breaks(text) == "line\nnext\n| a<br>b | c |\nx"


def test_repair_chain() -> None:
    raw = "```markdown\nAnswer [1].<br>More [^7].\n\n\n\n[https://a.com](https://a.com) \ufffd\n```"
    assert repair_markdown(raw) == "Answer [1].\nMore [^7].\n\n[a.com](https://a.com)\n"
    # Markers are left for the reference builder.
    assert "[1]" in repair_markdown("Answer [1].")


def test_length_guard() -> None:
    original = "x" * 100
    assert length_guard(original, "y" * 90) == "y" * 90
    assert length_guard(original, "y" * 84) == original
    assert length_guard(original, "   ") == original


def test_stray_fence_line_is_dropped() -> None:
    # An unmatched fence would swallow the rest of the answer into a code block.
    assert drop_stray_fence("```\nThe tower is tall.") == "The tower is tall."
    assert drop_stray_fence("The tower is tall.\n```") == "The tower is tall."
    assert (
        drop_stray_fence("Intro\n```\ncode\n```\nstray below\n~~~")
        == "Intro\n```\ncode\n```\nstray below"
    )
    paired = "Intro\n```python\nx = 1\n```\nOutro"
    assert drop_stray_fence(paired) == paired
    assert repair_markdown("Intro line.\n```\nThe tower is tall.") == (
        "Intro line.\nThe tower is tall.\n"
    )
