"""The simulated web of the latency benchmark: HotpotQA paragraphs as article pages,
and a lexical search engine over them.

Every corpus paragraph is an article at `/wiki/<Title_with_underscores>` on one
site (one host, as a Wikipedia chain is). Pages are shaped like real articles: a
cookie banner, a site menu, the paragraph with in-text links, "See also", a large
navbox and a footer — about 120 in-site links per page. A link to a title that is
not in the corpus leads to a short stub article (the reader must cope with junk).
"""

from __future__ import annotations

import hashlib
import html
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

_WORD = re.compile(r"\w+", re.UNICODE)
_PROPER = re.compile(r"\b[A-Z][\w'-]+(?: (?:of |the |de )?[A-Z][\w'-]+)*")
NAVBOX_LINKS = 90
INLINE_LINKS = 24
MENU = ["Main page", "Contents", "Current events", "Random article", "About", "Contact us"]
FOOTER = ["Privacy policy", "About", "Disclaimers", "Code of Conduct", "Developers", "Statistics"]
COOKIE_BANNER = (
    '<div id="cookie-banner" class="cookie-consent" role="dialog">We use cookies and '
    "similar technologies to improve your experience, to show you personalised content and "
    "to analyse our traffic. By clicking “Accept all” you agree to our use of cookies. "
    '<a href="/wiki/Privacy_policy">Privacy policy</a> '
    "<button>Accept all</button> <button>Reject non-essential</button></div>"
)


def stable_fraction(text: str) -> float:
    """A deterministic pseudo-random number in [0, 1) for a key (not Python's hash)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def wiki_path(title: str) -> str:
    return "/wiki/" + quote(title.replace(" ", "_"), safe="()',")


def title_of(path: str) -> str:
    return unquote(path.removeprefix("/wiki/")).replace("_", " ")


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


@dataclass
class Site:
    """The corpus (title -> paragraph text) and what is derived from it."""

    paragraphs: dict[str, str]
    _titles: list[str] = field(default_factory=list)
    _df: Counter[str] = field(default_factory=Counter)
    _docs: dict[str, Counter[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._titles = sorted(self.paragraphs)
        for title, text in self.paragraphs.items():
            bag = Counter(words(title + " " + title + " " + text))
            self._docs[title] = bag
            self._df.update(bag.keys())

    @classmethod
    def from_corpus(cls, corpus: dict[str, list[str]]) -> Site:
        return cls({t: "".join(s).strip() for t, s in corpus.items()})

    # ------------------------------------------------------------ search

    def search(self, query: str, n: int = 10) -> list[tuple[str, str]]:
        """Top-n (title, snippet) by BM25 over title (twice) and text."""
        terms = set(words(query))
        total = len(self._docs)
        avg = sum(sum(b.values()) for b in self._docs.values()) / max(1, total)
        scored = []
        for title, bag in self._docs.items():
            length = sum(bag.values())
            score = 0.0
            for term in terms & bag.keys():
                idf = math.log(1 + (total - self._df[term] + 0.5) / (self._df[term] + 0.5))
                tf = bag[term]
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))
            if score > 0:
                scored.append((score, title))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [(t, self.paragraphs[t][:240]) for _, t in scored[:n]]

    # ------------------------------------------------------------ pages

    def page(self, title: str) -> str:
        text = self.paragraphs.get(title)
        if text is None:
            text = f"{title} is a short stub article. This article about {title} needs expansion."
        return _article(title, _link_inline(text, title), self._related(title))

    def _related(self, title: str) -> list[str]:
        """A deterministic pseudo-random choice of other articles, for See also and navbox."""
        ranked = sorted(self._titles, key=lambda t: stable_fraction(title + "|" + t))
        return [t for t in ranked if t != title][: NAVBOX_LINKS + 6]


def _link_inline(text: str, own_title: str) -> str:
    """Escaped paragraph with proper-noun phrases linked, as an encyclopedia links them."""
    out, last, linked = [], 0, 0
    for match in _PROPER.finditer(text):
        phrase = match.group(0)
        before = text[: match.start()].rstrip()
        sentence_start = not before or before[-1] in '.!?"'
        if linked >= INLINE_LINKS or phrase == own_title or (sentence_start and " " not in phrase):
            continue  # a capitalised first word is not a name
        out.append(html.escape(text[last : match.start()]))
        out.append(f'<a href="{wiki_path(phrase)}" title="{html.escape(phrase)}">')
        out.append(html.escape(phrase) + "</a>")
        last = match.end()
        linked += 1
    out.append(html.escape(text[last:]))
    return "".join(out)


def _links(titles: list[str], sep: str) -> str:
    return sep.join(
        f'<a href="{wiki_path(t)}" title="{html.escape(t)}">{html.escape(t)}</a>' for t in titles
    )


def _article(title: str, body: str, related: list[str]) -> str:
    esc = html.escape(title)
    see_also = "".join(f"<li>{_links([t], '')}</li>" for t in related[:6])
    navbox = _links(related[6:], " · ")
    menu = _links(MENU, " | ")
    footer = _links(FOOTER, " · ")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{esc} - Open Encyclopedia</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
</head><body>
{COOKIE_BANNER}
<header><nav class="site-menu">{menu}</nav>
<form action="/search"><input name="q" placeholder="Search Open Encyclopedia"></form></header>
<main><article>
<h1 id="firstHeading">{esc}</h1>
<div class="shortdescription">From Open Encyclopedia, the free encyclopedia</div>
<p>{body}</p>
<h2>See also</h2>
<ul>{see_also}</ul>
</article>
<div class="navbox" role="navigation"><table><tr><th>Related articles</th></tr>
<tr><td class="navbox-list">{navbox}</td></tr></table></div>
</main>
<footer><p>This page was last edited on 3 March 2025.</p><nav>{footer}</nav></footer>
</body></html>
"""
