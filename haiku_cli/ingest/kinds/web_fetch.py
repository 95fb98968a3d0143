"""Asking a page whether it changed, without reading it: `sync --check-remote`'s conditional request.
A page is read by convert/url.py, whose download checks each redirect (see docs/sources.md)."""

from __future__ import annotations

from haiku_cli.errors import exception_reason
from haiku_cli.ingest.convert.download import USER_AGENT
from haiku_cli.ingest.convert.url import PAGE_ACCEPT, Validators
from haiku_cli.ingest.kinds.base import Freshness


def asked_page(url: str, known: Validators, timeout: float) -> tuple[Freshness, str | None]:
    """Whether a page changed since `known`, asked with a conditional request whose body is never read
    (304: fresh; the same ETag or Last-Modified: fresh; 404/410: missing); why when it could not be said."""
    import httpx

    if not (known.etag or known.last_modified):
        return Freshness.UNKNOWN, "no ETag or Last-Modified was stored to ask with"
    headers = {"User-Agent": USER_AGENT, "Accept": PAGE_ACCEPT}
    if known.etag:
        headers["If-None-Match"] = known.etag
    if known.last_modified:
        headers["If-Modified-Since"] = known.last_modified
    try:
        client = httpx.Client(follow_redirects=False, timeout=timeout, headers=headers)
        with client, client.stream("GET", url) as response:
            status, got = response.status_code, response.headers
    except httpx.HTTPError as exc:
        return Freshness.UNKNOWN, f"the server could not be asked: {exception_reason(exc)}"
    if status == 304:
        return Freshness.FRESH, None
    if status in (404, 410):
        return Freshness.MISSING, f"the server answered {status}"
    if status != 200:
        return Freshness.UNKNOWN, f"the server answered {status}"
    same = (known.etag and got.get("etag") == known.etag) or (
        known.last_modified and got.get("last-modified") == known.last_modified
    )
    return (Freshness.FRESH if same else Freshness.CHANGED), None
