"""Finalizer repair helpers."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from deepsearch.agent.citations.markdown import (
    clean_html_breaks,
    drop_stray_fence,
    html_tables_to_markdown,
    length_guard,
    normalize_footnotes,
    readable_links,
    repair_markdown,
    unwrap_fence,
)


def test_footnote_forms_are_normalized() -> None:
    text = "A [1]. B [1^]. C [^1, ^2]. D [^2][^3]. E [1, 3]. F [^9]."
    assert normalize_footnotes(text, 3) == "A[^1]. B[^1]. C[^1][^2]. D[^2][^3]. E[^1][^3]. F."


def test_markers_above_reference_count_and_their_definitions_go() -> None:
    text = "Claim.[^1] Other.[^4]\n\n[^1]: one\n[^4]: four"
    assert normalize_footnotes(text, 1) == "Claim.[^1] Other.\n\n[^1]: one"
    assert normalize_footnotes("x [^1]", 0) == "x"


def test_non_markers_are_left_alone() -> None:
    text = "arr[1] and [2020] and [1](https://a.io)\n```\ny = z[^1] [3]\n```"
    assert normalize_footnotes(text, 0) == text


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet="ab .,\n", max_size=8),
            st.integers(0, 12).map(lambda n: f"[^{n}]"),
            st.integers(0, 12).map(lambda n: f"[{n}]"),
            st.integers(0, 12).map(lambda n: f"[{n}^]"),
            st.lists(st.integers(0, 12), min_size=1, max_size=3).map(
                lambda ns: "[" + ", ".join(f"^{n}" for n in ns) + "]"
            ),
        ),
        max_size=12,
    ),
    st.integers(0, 6),
)
def test_footnotes_property_only_valid_caret_markers_remain(
    parts: list[str], num_refs: int
) -> None:
    out = normalize_footnotes("".join(parts), num_refs)
    assert all(1 <= int(n) <= num_refs for n in re.findall(r"\[\^(\d+)\]", out))
    assert not re.search(r"(?<!\w)\[\^?\d+\^?\](?![(:])", re.sub(r"\[\^\d+\]", "", out))
    assert normalize_footnotes(out, num_refs) == out  # idempotent


def test_unwrap_fence() -> None:
    assert unwrap_fence("```markdown\n# Hi\ntext\n```") == "# Hi\ntext"
    assert unwrap_fence("```\nplain\n```\n") == "plain"
    assert unwrap_fence("```python\nprint(1)\n```") == "```python\nprint(1)\n```"
    assert unwrap_fence("Intro\n```md\nx\n```") == "Intro\n```md\nx\n```"


def test_readable_links() -> None:
    text = "[https://www.example.com/a/b](https://www.example.com/a/b) and [https://x.io](https://x.io)"
    out = readable_links(text, {"https://x.io": "X [home]"})
    assert out == "[example.com/a/b](https://www.example.com/a/b) and [X (home)](https://x.io)"
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
    assert repair_markdown(raw, num_refs=1) == "Answer[^1].\nMore.\n\n[a.com](https://a.com)\n"
    # num_refs=None leaves markers for the reference builder.
    assert "[1]" in repair_markdown("Answer [1].")


def test_length_guard() -> None:
    original = "x" * 100
    assert length_guard(original, "y" * 90) == "y" * 90
    assert length_guard(original, "y" * 84) == original
    assert length_guard(original, "   ") == original


def test_definition_lines_are_kept_verbatim() -> None:
    text = 'Claim.[^1]\n\n[^1]: "Built in 1889 [2] by Eiffel [1]." — [T](https://t.io)'
    assert normalize_footnotes(text, 1) == text


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
