"""A real HTTP server on loopback serving the pages the reader must cope with.

Stdlib ThreadingHTTPServer on (host, 0). Every request is recorded so tests can
assert that a refused URL never reached the server.
"""

from __future__ import annotations

import functools
import gzip
import html
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tests.fakes.loopback import PromptShutdown

Route = Callable[["_Handler"], None]

ARTICLE_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Tidal Power in the Bay of Fundy | Example News</title>
<meta property="article:published_time" content="2024-05-17T08:00:00Z">
</head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article>
<h1>Tidal Power in the Bay of Fundy</h1>
<p>The Bay of Fundy has the highest tides in the world, reaching sixteen metres
in the Minas Basin. Engineers have studied how to turn that motion into
electricity for more than a century, with mixed results.</p>
<p>A pilot turbine installed in 2009 was destroyed within weeks by the force of
the current. Later designs, described in the <a href="/reports/fundy-2019.pdf">2019
report</a> and on <a href="https://energy.example.org/tides">the provincial site</a>,
sit on the sea floor and rotate slowly.</p>
<table>
<tr><th>Year</th><th>Capacity (MW)</th></tr>
<tr><td>2009</td><td>1.0</td></tr>
<tr><td>2016</td><td>2.0</td></tr>
<tr><td>2022</td><td>9.0</td></tr>
</table>
<p>Local fishers worry about the effect on herring and lobster, and the
regulator requires monitoring of marine life around every turbine site.</p>
<p>See also <a href="/reports/fundy-2019.pdf">the report again</a>,
<a href="mailto:desk@example.org">mail the desk</a> and <a href="#top">top</a>.</p>
</article>
<footer>Copyright Example News</footer>
</body></html>
"""

CYRILLIC_TEXT = (
    "Москва является столицей Российской Федерации и крупнейшим городом страны. "
    "Город расположен на реке Москве в центре Восточно-Европейской равнины. "
    "Население города составляет более двенадцати миллионов человек, "
    "а его история насчитывает почти девять веков."
)
LATIN1_TEXT = (
    "Le café de la gare était fermé ce matin-là. Les employés étaient déjà "
    "partis à la fête du village, où l'on servait des crêpes et du cidre bien frais."
)


def tiny_pdf(text: str = "Hello from a tiny PDF document") -> bytes:
    """A valid one-page PDF with one line of Helvetica text (offsets computed)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Title (Tiny Test PDF) >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\n"
        f"startxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer  # type: ignore[assignment]
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes: with Nagle on, the body waits for
    # the client's delayed ACK (~40 ms a reply on loopback; no real server waits).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        self.server.record(self)
        route = self.server.routes.get(urlsplit(self.path).path)
        if route is None:
            self.send_body(404, b"not found", "text/plain")
            return
        try:
            route(self)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up (e.g. aborted a huge body): expected

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length)
        self.server.posted.append(self.body)
        self.do_GET()

    @property
    def query(self) -> dict[str, str]:
        return {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}

    def send_body(
        self,
        status: int,
        body: bytes,
        content_type: str | None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location: str, status: int = 302) -> None:
        self.send_body(status, b"", "text/plain", {"Location": location})


class LoopbackServer(PromptShutdown, ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, host: str = "127.0.0.1", routes: dict[str, Route] | None = None) -> None:
        super().__init__((host, 0), _Handler)
        self.routes: dict[str, Route] = dict(routes or {})
        self.requests: list[tuple[str, dict[str, str]]] = []  # (path, headers)
        self.bytes_sent: dict[str, int] = {}
        self.posted: list[bytes] = []  # POST bodies, in order
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def url(self, path: str) -> str:
        return self.base + path

    def record(self, handler: _Handler) -> None:
        with self._lock:
            self.requests.append((handler.path, dict(handler.headers.items())))

    def add_bytes(self, path: str, count: int) -> None:
        with self._lock:
            self.bytes_sent[path] = self.bytes_sent.get(path, 0) + count

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


# ---------------------------------------------------------------- routes


def _huge(handler: _Handler) -> None:
    """50 MB of HTML, streamed without a Content-Length, counting what was sent."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.close_connection = True
    chunk = b"<p>" + b"x" * (64 * 1024 - 7) + b"</p>\n"
    for _ in range(800):
        handler.wfile.write(chunk)
        handler.server.add_bytes("/huge", len(chunk))


def _huge_declared(handler: _Handler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", str(50 * 1024 * 1024))
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.close_connection = True
    handler.wfile.write(b"<p>" + b"x" * 1000)
    handler.server.add_bytes("/huge-declared", 1003)


def _slow(handler: _Handler) -> None:
    """Headers at once, then the body trickles: only a total timeout catches it."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Content-Length", "100")
    handler.end_headers()
    for _ in range(100):  # 2 s in all, a byte every 20 ms: no single read waits long
        handler.wfile.write(b"x")
        handler.wfile.flush()
        time.sleep(0.02)


def _delay(handler: _Handler) -> None:
    time.sleep(int(handler.query.get("ms", "300")) / 1000)
    n = handler.query.get("n", "0")
    handler.send_body(
        200,
        f"<html><head><title>Page {n}</title></head><body><article><h1>Page {n}</h1>"
        f"<p>{'Delayed content for the concurrency benchmark. ' * 20}</p></article></body></html>".encode(),
        "text/html; charset=utf-8",
    )


def _hop(handler: _Handler) -> None:
    left = int(handler.query.get("n", "0"))
    if left > 0:
        handler.redirect(f"/hop?n={left - 1}")
    else:
        handler.send_body(200, b"You reached the end of the redirect chain.", "text/plain")


def _redirect_to(handler: _Handler) -> None:
    handler.redirect(handler.query["to"])


def _gzip(handler: _Handler) -> None:
    body = gzip.compress(ARTICLE_HTML.encode())
    handler.send_body(200, body, "text/html; charset=utf-8", {"Content-Encoding": "gzip"})


def _text(body: bytes, content_type: str | None, status: int = 200) -> Route:
    return lambda handler: handler.send_body(status, body, content_type)


def site_routes() -> dict[str, Route]:
    cp1251_page = f"<html><body><article><p>{CYRILLIC_TEXT}</p></article></body></html>"
    latin1_meta = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
        f"</head><body><article><p>{LATIN1_TEXT}</p></article></body></html>"
    )
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    return {
        "/article": _text(ARTICLE_HTML.encode(), "text/html; charset=utf-8"),
        "/doc.pdf": _text(tiny_pdf(), "application/pdf"),
        "/huge": _huge,
        "/huge-declared": _huge_declared,
        "/slow": _slow,
        "/delay": _delay,
        "/loop/a": lambda h: h.redirect("/loop/b"),
        "/loop/b": lambda h: h.redirect("/loop/a"),
        "/hop": _hop,
        "/redirect-to": _redirect_to,
        "/missing": _text(b"gone", "text/plain", 404),
        "/error": _text(b"boom", "text/html", 500),
        "/image.png": _text(png, "image/png"),
        "/blob": _text(b"\x00\x01\x02binary\xff" * 50, "application/octet-stream"),
        "/cp1251": _text(cp1251_page.encode("cp1251"), "text/html; charset=windows-1251"),
        "/cp1251-unlabelled": _text(cp1251_page.encode("cp1251"), "text/html"),
        "/latin1-meta": _text(latin1_meta.encode("latin-1"), "text/html"),
        "/gzip": _gzip,
        "/plain.txt": _text(b"Just plain text, kept as it is.\nSecond line.", "text/plain"),
        "/notes.md": _text(b"# Notes\n\n- one\n- two\n", "text/markdown; charset=utf-8"),
        "/data.json": _text(b'{"answer": 42, "unit": "metres"}', "application/json"),
        "/blank": _text(b"<html><body><script>var x = 1;</script></body></html>", "text/html"),
        "/secret": _text(b"internal secret", "text/plain"),
        # A link-dense encyclopedia article (>150 in-page links): /wiki/Bay_of_Fundy
        **wiki_routes(SAMPLE_WIKI),
    }


# ---------------------------------------------------------------- a link-dense wiki
#
# Pages shaped like real encyclopedia articles: a cookie banner, a header menu,
# prose with inline in-site links, a "See also" list, a navbox of 120 links and a
# footer -- more than 150 in-page links each, as Wikipedia has 100-300. Article
# prose uses [[Target]] / [[Target|text]] for inline links.

_PLACES = (
    "Aldmere Arrow Brack Caldy Dunmore Elsby Farrow Glenhaven Holm Iverly Jarrow Kestle"
).split()
_KINDS = "Lighthouse,Railway,Harbour,Canal,Bridge,Abbey,Castle,Mill,Museum,Pier".split(",")
NAVBOX_TITLES = [f"{place} {kind}" for kind in _KINDS for place in _PLACES]  # 120
_MENU = (
    "Main_Page Contents Current_events Random_article About Help Community_portal "
    "Recent_changes Upload_file Special_pages Donate Log_in"
).split()
_FOOTER = "Terms_of_use Privacy_policy Contact Code_of_conduct Developers Statistics".split()
_WIKILINK = re.compile(r"\[\[([^\]|]+)(?:\|([^\]]+))?\]\]")


SAMPLE_WIKI = {
    "Bay of Fundy": [
        "The [[Bay of Fundy]] lies between [[New Brunswick]] and [[Nova Scotia]]. It has "
        "the highest [[tide]]s in the world, reaching sixteen metres in the [[Minas Basin]].",
        "A pilot [[tidal turbine]] installed in 2009 was destroyed within weeks by the "
        "current; later designs sit on the sea floor and rotate slowly, like those in the "
        "[[Gulf of Maine]] and the [[Atlantic Ocean]] off [[Cape Split]].",
    ]
}


def wiki_slug(title: str) -> str:
    return title.strip().replace(" ", "_")


def _inline_links(paragraph: str) -> str:
    def link(match: re.Match[str]) -> str:
        target, text = match.group(1), match.group(2) or match.group(1)
        return f'<a href="/wiki/{html.escape(wiki_slug(target))}">{html.escape(text)}</a>'

    return _WIKILINK.sub(link, html.escape(paragraph, quote=False))


@functools.cache
def _navbox(group: str) -> str:
    rows = []
    for kind in _KINDS:
        items = "".join(
            f'<li><a href="/wiki/{wiki_slug(t)}">{t}</a></li>'
            for t in NAVBOX_TITLES
            if t.endswith(kind)
        )
        rows.append(f'<tr><th scope="row">{kind}s</th><td><ul class="hlist">{items}</ul></td></tr>')
    return (
        f'<div class="navbox" role="navigation" aria-label="{group}"><table>'
        f'<tr><th colspan="2">{group}</th></tr>{"".join(rows)}</table></div>'
    )


def wiki_article_html(title: str, paragraphs: list[str], see_also: list[str]) -> bytes:
    menu = "".join(f'<li><a href="/wiki/{p}">{p.replace("_", " ")}</a></li>' for p in _MENU)
    also = "".join(f'<li><a href="/wiki/{wiki_slug(t)}">{t}</a></li>' for t in see_also)
    footer = "".join(f'<li><a href="/wiki/{p}">{p.replace("_", " ")}</a></li>' for p in _FOOTER)
    body = "".join(f"<p>{_inline_links(p)}</p>" for p in paragraphs)
    page = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)} - Coastpedia</title></head><body>"
        '<div id="cookie-banner" class="cookie-notice">We use cookies to improve your '
        'experience. <a href="/wiki/Privacy_policy">Privacy policy</a> '
        "<button>Accept all</button> <button>Reject</button></div>"
        f'<header><nav id="menu"><ul>{menu}</ul></nav>'
        '<form action="/search"><input name="q" placeholder="Search Coastpedia"></form></header>'
        f"<main><article><h1>{html.escape(title)}</h1>{body}"
        f"<h2>See also</h2><ul>{also}</ul></article>"
        f"{_navbox('Coastal heritage of the Western Shore')}</main>"
        f"<footer><ul>{footer}</ul>Text is available under a free licence.</footer>"
        "</body></html>"
    )
    return page.encode("utf-8")


def wiki_routes(articles: dict[str, list[str]]) -> dict[str, Route]:
    """`/wiki/<Title_with_underscores>` for each article (title -> paragraphs); every
    page's "See also" names four navbox titles and six lists of its own."""
    routes: dict[str, Route] = {}
    for n, (title, paragraphs) in enumerate(articles.items()):
        lists = ("Lighthouses", "Engineers", "Harbours", "Shipwrecks", "Ferries", "Quarries")
        also = NAVBOX_TITLES[n * 4 : n * 4 + 4] + [f"List of {k} near {title}" for k in lists]
        body = wiki_article_html(title, paragraphs, also)
        routes[f"/wiki/{wiki_slug(title)}"] = _text(body, "text/html; charset=utf-8")
    return routes
