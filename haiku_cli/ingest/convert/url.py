"""Fetch a URL with httpx and convert the response by its content type."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert.dispatch import convert_bytes
from haiku_cli.ingest.convert.download import download_if_changed
from haiku_cli.ingest.document import ConvertedDocument

PAGE_ACCEPT = "text/html, text/markdown, text/plain, */*;q=0.5"


def fetch_url(url: str, *, timeout: float = 30, limits: IngestSettings | None = None) -> ConvertedDocument:
    """Download `url` and convert it; network and HTTP failures raise ConversionError, and so does a
    redirect from a public address to a local or private one (see convert/download.py).

    A download is stopped, and refused, once it passes `limits.max_file_mb`.
    """
    # Asked without validators, a server never answers "not modified": the document is always there.
    return fetch_if_changed(url, timeout=timeout, limits=limits).document  # type: ignore[return-value]


@dataclass(frozen=True)
class Validators:
    """What a server said identifies the version it sent (ETag, Last-Modified), for a conditional request."""

    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True)
class Fetched:
    """A URL read again: its document, or None when the server said it is unchanged (HTTP 304)."""

    document: ConvertedDocument | None
    validators: Validators


def fetch_if_changed(
    url: str,
    known: Validators | None = None,
    *,
    timeout: float = 30,
    limits: IngestSettings | None = None,
) -> Fetched:
    """`fetch_url`, asking the server to send the body only if it changed since `known` was sent (then
    the document is None)."""
    limits = limits or IngestSettings()
    known = known or Validators()
    got = download_if_changed(
        url,
        timeout=timeout,
        limits=limits,
        accept=PAGE_ACCEPT,
        etag=known.etag,
        last_modified=known.last_modified,
    )
    if got.data is None:
        return Fetched(None, known)
    # Keep the requested URL as the identity (re-adding it matches), but read suffixes from the final one.
    doc = convert_bytes(got.data, uri=got.url, content_type=got.content_type, limits=limits)
    return Fetched(dataclasses.replace(doc, uri=url), Validators(got.etag, got.last_modified))
