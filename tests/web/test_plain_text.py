"""The text the LLM reads is plain for every kind of body; links come separately."""

from __future__ import annotations

import re

import pytest

from deepsearch.web.extract import Extracted, extract_body
from deepsearch.web.markdown_plain import markdown_to_plain, markdown_to_plain_with_links
from tests.fakes.web_server import tiny_pdf

URL = "https://wiki.example.org/wiki/Rail_transport"
LATEX_QUOTE = "``in order to allow the through running of trains''"


def link_dense_article(links: int = 150) -> str:
    """A Wikipedia-shaped page: links inline in the prose, a navbox, a nav bar."""
    inline = " ".join(
        f'the <a href="/wiki/Topic_{i}">topic {i}</a> line was extended in {1850 + i}.'
        for i in range(links // 2)
    )
    navbox = " ".join(f'<a href="/wiki/Nav_{i}">Nav {i}</a>' for i in range(links // 2))
    return f"""<!doctype html><html><head><title>Rail transport - Wiki</title></head><body>
<nav><a href="/wiki/Main_Page">Main page</a> <a href="/wiki/Special:Random">Random</a></nav>
<main><article><h1>Rail transport</h1>
<p>The gauge was changed in 1900 {LATEX_QUOTE}, as the company's report put it.</p>
<p>History of the network: {inline}</p>
<h2>Lines</h2>
<table><tr><th>Line</th><th>Opened</th></tr><tr><td>North <a href="/wiki/North_line">line</a></td><td>1901</td></tr>
<tr><td>South</td><td>1903</td></tr></table>
<p>The network is operated by <a href="https://operator.example.com/">the operator</a> today.</p>
</article></main>
<div class="navbox">{navbox}</div>
<footer><a href="/wiki/Terms">Terms of use</a></footer></body></html>"""


def html_page(html: str) -> Extracted:
    result = extract_body(html.encode(), "text/html; charset=utf-8", URL)
    assert isinstance(result, Extracted)
    return result


def test_link_dense_html_has_anchor_text_but_no_link_targets() -> None:
    page = html_page(link_dense_article())
    assert "http" not in page.text and "](" not in page.text and "/wiki/" not in page.text
    assert "the topic 7 line was extended in 1857." in page.text
    assert "operated by the operator today." in page.text


def test_latex_quotes_come_out_verbatim_without_escapes() -> None:
    """Regression: a quote was cited as '1900 \\\\in order to allow' (a markdown escape)."""
    page = html_page(link_dense_article())
    assert f"changed in 1900 {LATEX_QUOTE}, as" in page.text
    assert "\\" not in page.text


def test_blocks_are_lines_separated_by_blank_lines_tables_a_row_a_line() -> None:
    text = html_page(link_dense_article()).text
    blocks = text.split("\n\n")
    assert blocks[0] == "Rail transport"
    assert "Lines" in blocks
    assert "| Line | Opened |\n| North line | 1901 |\n| South | 1903 |" in blocks
    assert all("\n" not in block for block in blocks if not block.startswith("|"))
    assert not any(re.fullmatch(r"[|\s:-]+", line) for line in text.split("\n"))  # no rules


def test_content_links_first_then_navigation() -> None:
    page = html_page(link_dense_article())
    content = page.links[: page.content_links]
    rest = page.links[page.content_links :]
    assert content[0] == ("topic 0", "https://wiki.example.org/wiki/Topic_0")
    assert ("line", "https://wiki.example.org/wiki/North_line") in content
    assert ("the operator", "https://operator.example.com/") in content
    assert rest[0] == ("Main page", "https://wiki.example.org/wiki/Main_Page")
    assert ("Nav 3", "https://wiki.example.org/wiki/Nav_3") in rest
    assert ("Terms of use", "https://wiki.example.org/wiki/Terms") in rest
    assert not any("/wiki/Nav_" in url for _, url in content)
    assert len({url for _, url in page.links}) == len(page.links)


def test_a_content_link_is_never_invented() -> None:
    """A target trafilatura resolves its own way (#frag) matches no page link: dropped."""
    html = (
        "<html><body><article><p>"
        + "Some words of the article body. " * 20
        + '<a href="#notes">see the notes</a> and <a href="mailto:a@b.c">mail</a>.</p>'
        + "</article></body></html>"
    )
    page = html_page(html)
    assert page.links == [] and page.content_links == 0


MARKDOWN = """---
title: Notes
---
# Tides of the *Bay*

The tides reach **16 m**, says [the 2019 report](/reports/2019.pdf "PDF") and
[the survey][s]. An ![chart](chart.png) image, `code_span`, snake_case_name and
\\`\\`in order to allow\\'\\' kept as written, 3 \\* 4.

| Year | Capacity \\| MW |
|---|---:|
| 2009 | [1.0](/t/2009) |

- first item
1. second item
> quoted *words*

```python
x = "[not](a-link)"
```

[s]: https://survey.example.org/tides
"""


def test_markdown_becomes_plain_text_and_its_links() -> None:
    text, links = markdown_to_plain_with_links(MARKDOWN, "https://notes.example.org/dir/page")
    assert text.split("\n\n") == [
        "Tides of the Bay",
        "The tides reach 16 m, says the 2019 report and the survey. An image, code_span, "
        "snake_case_name and ``in order to allow'' kept as written, 3 * 4.",
        "| Year | Capacity ¦ MW |\n| 2009 | 1.0 |",
        "- first item\n- second item",
        "quoted words",
        'x = "[not](a-link)"',
    ]
    assert links == [
        ("the 2019 report", "https://notes.example.org/reports/2019.pdf"),
        ("the survey", "https://survey.example.org/tides"),
        ("1.0", "https://notes.example.org/t/2009"),
    ]
    assert markdown_to_plain(MARKDOWN) == text


@pytest.mark.parametrize(
    ("content_type", "url"),
    [
        ("text/markdown; charset=utf-8", "https://notes.example.org/page"),
        ("text/plain", "https://raw.example.org/repo/README.md"),
    ],
)
def test_markdown_bodies_are_read_as_plain(content_type: str, url: str) -> None:
    result = extract_body(MARKDOWN.encode(), content_type, url)
    assert isinstance(result, Extracted)
    assert result.text.startswith("Tides of the Bay\n\nThe tides reach 16 m, says the 2019")
    assert "](/" not in result.text and "\\" not in result.text and "**" not in result.text
    assert result.content_links == len(result.links) == 3


def test_plain_text_files_keep_their_characters() -> None:
    body = b"Costs: 3 * 4 = 12 and a_b_c [sic]\r\nSecond line.  \n\n\n\nThird."
    result = extract_body(body, "text/plain", "https://example.org/notes.txt")
    assert isinstance(result, Extracted)
    assert result.text == "Costs: 3 * 4 = 12 and a_b_c [sic]\nSecond line.\n\nThird."


def test_pdf_text_is_plain() -> None:
    result = extract_body(tiny_pdf("Hello plain PDF"), "application/pdf", "https://x.org/a.pdf")
    assert isinstance(result, Extracted)
    assert result.text == "Hello plain PDF"


def test_source_line_breaks_are_spaces_but_code_and_br_keep_theirs() -> None:
    html = (
        "<html><body><article><p>"
        + "Prose wrapped\nby the   editor of the page source. " * 8
        + "</p><pre><code>def f():\n    return 1</code></pre>"
        + "<p>First line<br>second line of a poem, long enough to be kept as content.</p>"
        + "</article></body></html>"
    )
    lines = html_page(html).text.split("\n")
    assert lines[0].startswith("Prose wrapped by the editor of the page source. Prose")
    assert "def f():" in lines and "    return 1" in lines
    assert "First line" in lines


@pytest.mark.timeout(15)  # a hang guard, not a timing: ~0.1 s when linear
@pytest.mark.parametrize("marker", ["*", "_", "**", "~~", "`"])
def test_unmatched_markers_on_a_long_line_stay_fast(marker: str) -> None:
    """An unbounded lazy emphasis match scans from each unmatched marker to the end of
    the line: quadratic, 30-50 s on a 60 kB paragraph of "*a ". A bounded one scans 300
    characters a marker. Markers 40 letters apart on a 210 kB line keep the unbounded
    scan as long (~28 s here, past the guard) for a third of the bounded one's work."""
    word = "a" * 40
    out = markdown_to_plain(f"{marker}{word} " * 5_000)
    assert out.count("a") == 40 * 5_000  # every word kept, unmatched markers or not


def test_markdown_to_plain_leaves_the_readers_plain_text_as_it_is() -> None:
    """Callers that still pass page text through markdown_to_plain get it unchanged."""
    from tests.fakes.web_server import ARTICLE_HTML

    for text in (
        html_page(link_dense_article()).text,
        html_page(ARTICLE_HTML).text,
        markdown_to_plain(MARKDOWN.replace('x = "[not](a-link)"', "x = 1")),
    ):
        assert markdown_to_plain(text) == text


SHORT_ARTICLE = """<!doctype html><html><head><title>Lilu - Wiki</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<main><article><h1>Lilu (mythology)</h1>
<div class="shortdescription">From the free encyclopedia</div>
<p>A lilu is a masculine Akkadian word for a spirit or demon.</p>
<h2>See also</h2><ul><li><a href="/wiki/Lilith">Lilith</a></li></ul>
</article></main></body></html>"""


def test_a_short_article_keeps_its_blocks_apart() -> None:
    """trafilatura's baseline runs a short page's heading, tagline and paragraph into
    one paragraph; a quote of it would then span the heading (seen in a citation)."""
    text = html_page(SHORT_ARTICLE).text
    assert "A lilu is a masculine Akkadian word for a spirit or demon." in text.split("\n\n")
    assert "Lilu (mythology)" in text.split("\n\n")


def test_a_real_one_paragraph_article_is_not_replaced_by_its_navigation() -> None:
    nav = " ".join(f'<li><a href="/s/{i}">Section {i}</a></li>' for i in range(30))
    body = "The council met on Tuesday and voted to extend the river walk by two miles. " * 6
    html = f"""<html><head><title>News</title></head><body><ul class="menu">{nav}</ul>
<div class="story"><div class="text">{body}</div></div></body></html>"""
    text = html_page(html).text
    assert "voted to extend the river walk" in text
    assert "Section 7" not in text
