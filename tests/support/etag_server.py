"""A one-page HTTP server on 127.0.0.1 that answers conditional requests (ETag / If-None-Match)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Page:
    """The page served (change `body` to publish a new version) and the status of each answer sent."""

    body: bytes
    url: str = ""
    statuses: list[int] = field(default_factory=list)

    @property
    def etag(self) -> str:
        """The current version's ETag: a hash of the body."""
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'


@contextmanager
def serve_page(body: bytes, path: str = "/page.html") -> Iterator[Page]:
    """Serve `body` as HTML at `path`; a request naming the current ETag gets 304 Not Modified."""
    page = Page(body)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.headers.get("If-None-Match") == page.etag:
                page.statuses.append(304)
                self.send_response(304)
                self.end_headers()
                return
            page.statuses.append(200)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("ETag", page.etag)
            self.send_header("Content-Length", str(len(page.body)))
            self.end_headers()
            self.wfile.write(page.body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output quiet

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    page.url = f"http://127.0.0.1:{httpd.server_address[1]}{path}"
    try:
        yield page
    finally:
        httpd.shutdown()
        httpd.server_close()
