"""A page on a public address cannot make `add-src` or `sync` read a loopback, link-local or private one,
neither by redirecting there nor through the pictures it links.

The "public" page is reached through a proxy on 127.0.0.1 (as an HTTP proxy would be configured), so
the client sees a public address and no packet leaves the machine.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest

from haiku_cli.ingest import pipeline
from haiku_cli.ingest.convert import fetch_url
from haiku_cli.ingest.convert.download import is_public
from haiku_cli.ingest.sync import sync_source
from haiku_cli.store import reads
from haiku_cli.store import source_tables as stored
from haiku_cli.store.blocking import wait
from haiku_cli.store.picture_table import pictures_of
from tests.ingest.support import new_db
from tests.support.pictures import png

PUBLIC = "http://93.184.216.34/notes.html"  # a global address, reached only through the proxy below
FIGURES = "http://93.184.216.34/figures.html"


@dataclass
class _Site:
    port: int = 0
    redirect_to: str | None = None  # where the public page sends its readers, if anywhere
    asked: list[str] = field(default_factory=list)


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Site]:
    state = _Site()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.asked.append(self.path)
            if self.path == PUBLIC and state.redirect_to is not None:
                self._answer(302, b"", location=state.redirect_to)
            elif self.path in (PUBLIC, "/local.html"):
                self._answer(200, b"<title>Notes</title><p>Kestrels hover over fields.</p>")
            elif self.path == "/hop":
                self._answer(302, b"", location="/local.html")
            elif self.path == "/secret":
                self._answer(200, b"<title>Secret</title><p>instance credentials</p>")
            elif self.path in (FIGURES, "/local-figures.html"):
                # One picture beside the page, one redirected to loopback, one linked on loopback.
                here = f"http://127.0.0.1:{state.port}"
                links = '<img src="/fine.png" alt="Fine"><img src="/away.png" alt="Away">'
                links += f'<img src="{here}/pic.png" alt="Linked">'
                self._answer(200, f"<title>Figures</title><p>Kestrels hover.</p>{links}".encode())
            elif self.path in ("http://93.184.216.34/fine.png", "/fine.png"):
                self._answer(200, png(200, 200, "green"), content_type="image/png")
            elif self.path in ("http://93.184.216.34/away.png", "/away.png"):
                self._answer(302, b"", location=f"http://127.0.0.1:{state.port}/elsewhere.png")
            elif self.path in ("/pic.png", "/elsewhere.png"):
                color = "blue" if self.path == "/pic.png" else "red"
                self._answer(200, png(200, 200, color), content_type="image/png")
            else:
                self._answer(404, b"not found")

        def _answer(
            self, status: int, body: bytes, location: str | None = None, content_type: str = "text/html"
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if location is not None:
                self.send_header("Location", location)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(var, raising=False)
    # Only the public address goes through the proxy; 127.0.0.1 is reached directly.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{state.port}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _add(db, embedder, *sources: str):
    return anyio.run(lambda: pipeline.add_sources(db, embedder, list(sources), title=None, metadata={}))


def _sync(db, embedder, source: str):
    (remembered,) = [s for s in stored.read_sources(db) if s.source == source]

    async def get_embedder():
        return embedder

    return anyio.run(lambda: sync_source(db, get_embedder, remembered))


def _contents(db) -> dict[str, str]:
    listed = wait(reads.list_documents(db, limit=None))
    return {d.uri: wait(reads.get_document(db, d.id)).content for d in listed if d.uri}


def test_a_public_page_redirecting_to_a_loopback_address_is_refused(tmp_path: Path, embedder, site) -> None:
    site.redirect_to = f"http://127.0.0.1:{site.port}/secret"
    db = new_db(tmp_path, embedder)
    (outcome,) = _add(db, embedder, PUBLIC).outcomes
    assert outcome.status == "failed"
    assert "a local or private address" in (outcome.error or "") and "add that address directly" in (
        outcome.error or ""
    )
    assert "/secret" not in site.asked and _contents(db) == {}


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "http://10.1.2.3/admin"])
def test_link_local_and_private_targets_are_refused_without_being_asked(
    tmp_path: Path, embedder, site, target: str
) -> None:
    site.redirect_to = target
    (outcome,) = _add(new_db(tmp_path, embedder), embedder, PUBLIC).outcomes
    assert outcome.status == "failed" and target in (outcome.error or "")
    assert site.asked == [PUBLIC]  # the proxy would have been asked for the target had it been followed


def test_a_loopback_address_given_directly_is_read_and_may_redirect_on_it(
    tmp_path: Path, embedder, site
) -> None:
    db = new_db(tmp_path, embedder)
    hop = f"http://127.0.0.1:{site.port}/hop"
    (outcome,) = _add(db, embedder, hop).outcomes
    assert outcome.status == "added", outcome.error
    assert "Kestrels hover" in _contents(db)[hop]


def test_a_remembered_page_that_later_redirects_to_a_loopback_address_is_refused_by_sync(
    tmp_path: Path, embedder, site
) -> None:
    db = new_db(tmp_path, embedder)
    assert _add(db, embedder, PUBLIC).outcomes[0].status == "added"
    site.redirect_to = f"http://127.0.0.1:{site.port}/secret"
    done = _sync(db, embedder, PUBLIC)
    assert (done.failed, done.updated) == (1, 0)
    assert "a local or private address" in (done.changes[0].error or "")
    assert "/secret" not in site.asked
    assert "Kestrels hover" in _contents(db)[PUBLIC]  # the stored page stays


def test_a_public_pages_pictures_on_a_loopback_address_are_left_out_and_the_note_says_why(
    tmp_path: Path, embedder, site
) -> None:
    db = new_db(tmp_path, embedder)
    (outcome,) = _add(db, embedder, FIGURES).outcomes
    assert outcome.status == "added", outcome.error
    (stored,) = wait(pictures_of(db, [outcome.document_id or ""]))[outcome.document_id or ""]
    assert stored.source == "http://93.184.216.34/fine.png"  # the page's own picture is kept
    note = outcome.note or ""
    here = f"http://127.0.0.1:{site.port}"
    assert f"redirected to {here}/elsewhere.png, a local or private address" in note
    assert f"{here}/pic.png: a local or private address linked from {FIGURES}" in note
    assert "add that address directly" in note
    # Neither the redirect nor the link was followed.
    assert "/pic.png" not in site.asked and "/elsewhere.png" not in site.asked


def test_a_loopback_pages_pictures_on_loopback_are_read_redirected_or_not(site) -> None:
    doc = fetch_url(f"http://127.0.0.1:{site.port}/local-figures.html")
    here = f"http://127.0.0.1:{site.port}"
    assert [p.source for p in doc.pictures] == [f"{here}/fine.png", f"{here}/away.png", f"{here}/pic.png"]
    assert "/elsewhere.png" in site.asked  # /away.png's redirect, followed on loopback
    assert doc.notes == ()


def test_which_addresses_count_as_public() -> None:
    assert is_public("93.184.216.34") and is_public("2606:2800:220:1:248:1893:25c8:1946")
    for host in ("127.0.0.1", "localhost", "::1", "169.254.169.254", "10.0.0.1", "192.168.1.1", "fd00::1"):
        assert not is_public(host), host
    assert not is_public("::ffff:127.0.0.1")  # an IPv4-mapped loopback
