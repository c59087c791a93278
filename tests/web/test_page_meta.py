"""A page's title and date are trafilatura's (with_metadata), and the extraction pays
none of the costs it dropped: the public-suffix list, justext's stoplist."""

from __future__ import annotations

import pytest

from deepsearch.web.extract import html_to_text

BODY = "<p>" + "The harbour trust published its annual figures on the tides. " * 8 + "</p>"


def _page(head: str, body: str = "") -> str:
    return f"<!doctype html><html><head>{head}</head><body>{body}<article>{BODY}</article></body></html>"


PAGES = [
    (
        "https://news.example.com/story",
        _page(
            '<title>Tides | News</title><meta property="og:title" content="Tides &amp; moon">'
            '<meta property="article:published_time" content="2021-05-17T08:00:00Z">'
        ),
    ),
    (
        "https://news.example.com/story",
        _page(
            '<title>Site</title><script type="application/ld+json">{"@context":'
            '"https://schema.org","@type":"NewsArticle","headline":"JSON-LD headline",'
            '"datePublished":"2020-02-03"}</script>'
        ),
    ),
    (
        "https://news.example.com/2019/04/12/story.html",
        _page("<title>The Harbour Trust - Annual tides</title>", "<h1>One</h1><h1>Two</h1>"),
    ),
    (
        "http://127.0.0.1:8123/wiki/Tides",
        _page("<title>Tides - Open Encyclopedia</title>", "<h1>Tides</h1>").replace(
            "</article>", "</article><footer>Last edited on 3 March 2025.</footer>"
        ),
    ),
    (
        "https://www.bbc.co.uk/news/x",
        _page(
            '<meta name="twitter:title" content="Twitter title">'
            '<link rel="canonical" href="https://www.bbc.co.uk/news/2018/06/01/x">'
        ),
    ),
    (
        "https://h.example/p",
        _page(
            '<meta itemprop="headline" content="  Spaced \n title  "><meta name="date" content="2017-09-30">'
        ),
    ),
]


@pytest.mark.parametrize(("url", "html"), PAGES)
def test_title_and_date_are_trafilatura_s_own(url: str, html: str) -> None:
    import trafilatura

    document = trafilatura.bare_extraction(
        html,
        url=url,
        with_metadata=True,
        include_comments=False,
        date_extraction_params={"extensive_search": False, "original_date": True},
    )
    assert document is not None and document.title
    page = html_to_text(html, url)
    assert (page.title, page.published) == (document.title.strip(), document.date or None)


def test_the_cases_the_comparison_covers() -> None:
    """The pages above do take the metadata paths they are there for."""
    found = [(page.title, page.published) for page in (html_to_text(h, u) for u, h in PAGES)]
    assert found == [
        ("Tides & moon", "2021-05-17"),
        ("JSON-LD headline", "2020-02-03"),
        ("The Harbour Trust", "2019-04-12"),
        ("Tides", "2025-03-03"),
        ("Twitter title", "2018-06-01"),
        ("Spaced title", "2017-09-30"),
    ]


def test_no_public_suffix_list_and_no_justext_stoplist(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hosts courlan's quick pattern leaves to the public-suffix list (an address with a
    port, a 3-letter name), and a short page with navigation (trafilatura's justext
    trigger): neither list is built, in the warm-up or in a page's extraction."""
    import tld.utils
    from trafilatura import external

    from deepsearch.web import warmup

    monkeypatch.setattr(external, "JT_STOPLIST", None)
    monkeypatch.setattr(tld.utils, "tld_names", {})
    warmup.warm_up()
    for url, html in PAGES:
        html_to_text(html, url)
    short = "<html><body><nav><a href='/'>Home</a></nav><article><p>Short text.</p></article></body></html>"
    assert html_to_text(short, "http://127.0.0.1:8123/x").text
    assert external.JT_STOPLIST is None, "justext's stoplist was built"
    assert tld.utils.tld_names == {}, "the public-suffix list was loaded"
