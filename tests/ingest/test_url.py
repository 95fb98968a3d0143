"""fetch_url against a throwaway HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert import fetch_url
from haiku_cli.ingest.document import ConversionError
from tests.support.pictures import png
from tests.support.silent_server import silent_server

from .helpers import make_pdf

ROUTES: dict[str, tuple[int, str, bytes]] = {
    "/page.html": (200, "text/html; charset=utf-8", b"<title>Served</title><h1>Hi</h1><p>Served page.</p>"),
    "/notes.txt": (200, "text/plain", b"plain notes\n"),
    "/readme.md": (200, "text/plain; charset=utf-8", b"# Readme Title\n\nbody\n"),
    "/doc.pdf": (200, "application/pdf", make_pdf(["pdf over http"])),
    "/empty.txt": (200, "text/plain", b""),
    "/image.png": (200, "image/png", b"\x89PNG\r\n"),
    "/image.gif": (200, "image/gif", b"GIF89a"),
    "/figures.html": (
        200,
        "text/html",
        b'<title>Figures</title><p>Two figures.</p><img src="img/small.png" alt="Small">'
        b'<img src="/big.png" alt="Big"><img src="/nothing.png" alt="Gone">',
    ),
    "/img/small.png": (200, "image/png", png(40, 40)),
    "/big.png": (200, "image/png", png(900, 900) + b"\0" * 2**20),
    # As Python's http.server lists a folder, and a folder of an nginx autoindex without its title.
    "/files/": (
        200,
        "text/html; charset=utf-8",
        b"<html><head><title>Directory listing for /files/</title></head><body>"
        b"<h1>Directory listing for /files/</h1><hr><ul><li><a href='a.md'>a.md</a></li>"
        b"<li><a href='b.pdf'>b.pdf</a></li></ul><hr></body></html>",
    ),
    "/bare/": (
        200,
        "text/html",
        b"<pre>" + b"".join(b"<a href='f%d.txt'>f%d.txt</a>\n" % (i, i) for i in range(8)) + b"</pre>",
    ),
    "/article.html": (
        200,
        "text/html",
        b"<title>Lanterns</title>"
        b"<p>Lanterns burn kerosene; see <a href='/a'>oil</a> and <a href='/b'>wicks</a>.</p>"
        + b"<p>More prose about lanterns and how they are trimmed.</p>"
        * 6,
    ),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/page.html")
            self.end_headers()
            return
        if self.path == "/slow":
            time.sleep(1)
        status, ctype, body = ROUTES.get(self.path, (404, "text/plain", b"not found"))
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout test)

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output quiet


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_fetch_html(server: str) -> None:
    doc = fetch_url(f"{server}/page.html")
    assert doc.uri == f"{server}/page.html"
    assert doc.title == "Served"
    assert doc.text == "# Hi\n\nServed page."


def test_fetch_text_and_markdown(server: str) -> None:
    doc = fetch_url(f"{server}/notes.txt")
    assert (doc.text, doc.title) == ("plain notes", "notes")
    assert fetch_url(f"{server}/readme.md").title == "Readme Title"


def test_fetch_pdf(server: str) -> None:
    doc = fetch_url(f"{server}/doc.pdf")
    assert [(s.page, s.text) for s in doc.segments] == [(1, "pdf over http")]


def test_redirect_keeps_requested_uri(server: str) -> None:
    doc = fetch_url(f"{server}/redirect")
    assert doc.uri == f"{server}/redirect"
    assert doc.title == "Served"


def test_http_errors(server: str) -> None:
    with pytest.raises(ConversionError, match=r"/missing: HTTP 404 Not Found"):
        fetch_url(f"{server}/missing")
    with pytest.raises(ConversionError, match="is empty"):
        fetch_url(f"{server}/empty.txt")
    with pytest.raises(ConversionError, match="unsupported content type image/gif"):
        fetch_url(f"{server}/image.gif")
    # Images are read by OCR (the `ocr` extra, which the tests install): a damaged one is refused.
    with pytest.raises(ConversionError, match=r"image\.png: not an image haiku can read"):
        fetch_url(f"{server}/image.png")


def test_timeout(server: str) -> None:
    with pytest.raises(ConversionError, match=r"/slow: timed out after 0\.2s$"):
        fetch_url(f"{server}/slow", timeout=0.2)


def test_a_server_sending_a_byte_at_a_time_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each byte comes well within the timeout, so only a bound on the whole download ends it.
    for var in ("HTTP_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    with silent_server(drip=0.05) as slow:
        url = slow.url.removesuffix("/v1") + "/drip.txt"
        with pytest.raises(ConversionError, match=r"/drip\.txt: too slow \(\d+ bytes/s after \d+ s; "):
            fetch_url(url, timeout=0.5)


def test_connection_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port any more.
    with pytest.raises(ConversionError, match=rf"^http://127\.0\.0\.1:{port}/x: cannot connect \(.+\)$"):
        fetch_url(f"http://127.0.0.1:{port}/x", timeout=5)


def test_not_http() -> None:
    with pytest.raises(ConversionError, match="not an http"):
        fetch_url("ftp://example.com/file.txt")


def test_a_fetched_page_brings_its_images_under_the_page_limits(server: str) -> None:
    doc = fetch_url(f"{server}/figures.html", limits=IngestSettings(max_file_mb=0.5))
    assert [(p.reference, p.caption, p.source) for p in doc.pictures] == [
        ("image-1", "Small", f"{server}/img/small.png")
    ]
    assert "![Small](picture:image-1)" in doc.text
    notes = "\n".join(doc.notes)
    assert "picture image-2 skipped" in notes and "over the limit of 0.5 MB" in notes
    assert "picture image-3 skipped" in notes and "HTTP 404" in notes


@pytest.mark.parametrize("path", ["/files/", "/bare/"])
def test_a_directory_listing_is_noted_as_not_crawled(server: str, path: str) -> None:
    doc = fetch_url(server + path)
    assert doc.notes == (
        f"{server}{path}: a directory listing, stored as one page of links; nothing it links to is crawled",
    )


def test_a_page_with_some_links_is_no_listing(server: str) -> None:
    assert fetch_url(server + "/article.html").notes == ()
