"""Read a page over loopback with the installed package (CI: the plain-pip install).

Serves deepsearch's own self-check page from a stdlib http.server on 127.0.0.1 in a
background thread, reads it with LocalReader (private URLs allowed for this read
only), asserts the extracted text, then runs the doctor's self-check too. The server
is shut down whatever happens. Exit 0 on success, 1 with a one-line reason.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def read(url: str) -> str | None:
    from deepsearch.config import ReaderConfig
    from deepsearch.web.reader import LocalReader
    from deepsearch.web.selfcheck import verify_text
    from deepsearch.web.types import ReadFailure

    reader = LocalReader(ReaderConfig(allow_private_urls=True))
    try:
        page = await reader.read(url)
    finally:
        await reader.aclose()
    if isinstance(page, ReadFailure):
        return f"read failed: {page.kind}: {page.detail}"
    return verify_text(page.text, page.links)


def main() -> int:
    import deepsearch
    from deepsearch.web.selfcheck import check_page_extraction, selfcheck_html

    print(f"deepsearch {deepsearch.__version__} from {deepsearch.__file__}")
    server = serve(selfcheck_html())
    try:
        host, port = server.server_address[:2]
        problem = asyncio.run(read(f"http://{host}:{port}/selfcheck.html"))
    finally:
        server.shutdown()
        server.server_close()
    if problem:
        print(f"loopback read: {problem}", file=sys.stderr)
        return 1
    check = asyncio.run(check_page_extraction())
    if not check.ok:
        print(f"doctor self-check: {check.detail}", file=sys.stderr)
        return 1
    print(f"loopback read ok; doctor self-check ok ({check.detail})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
