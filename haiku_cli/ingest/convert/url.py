"""Fetch a URL with httpx and convert the response by its content type."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert.dispatch import convert_bytes
from haiku_cli.ingest.convert.limits import over_limit
from haiku_cli.ingest.document import ConversionError, ConvertedDocument

if TYPE_CHECKING:
    import httpx

_USER_AGENT = "haiku-cli/0.1 (+local RAG ingest)"


def fetch_url(url: str, *, timeout: float = 30, limits: IngestSettings | None = None) -> ConvertedDocument:
    """Download `url` (redirects followed) and convert it; network or HTTP failures raise ConversionError.

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
    """`fetch_url`, asking the server to send the body only if it changed since `known` was sent."""
    import httpx

    limits = limits or IngestSettings()
    if not url.lower().startswith(("http://", "https://")):
        raise ConversionError(f"{url}: not an http(s) URL")
    headers = {"User-Agent": _USER_AGENT, "Accept": "text/html, text/markdown, text/plain, */*;q=0.5"}
    if known is not None and known.etag:
        headers["If-None-Match"] = known.etag
    if known is not None and known.last_modified:
        headers["If-Modified-Since"] = known.last_modified
    try:
        with (
            httpx.Client(follow_redirects=True, timeout=timeout, headers=headers) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code == 304 and known is not None:
                return Fetched(None, known)
            if response.status_code >= 400:
                phrase = f" {response.reason_phrase}" if response.reason_phrase else ""
                raise ConversionError(f"{url}: HTTP {response.status_code}{phrase}")
            data = _read_limited(response, url, limits)
            final_url = str(response.url)
            content_type = response.headers.get("content-type")
            validators = Validators(response.headers.get("etag"), response.headers.get("last-modified"))
    except httpx.TimeoutException as exc:
        raise ConversionError(f"{url}: timed out after {timeout:g}s") from exc
    except httpx.ConnectError as exc:
        raise ConversionError(f"{url}: cannot connect ({_reason(exc)})") from exc
    except httpx.TooManyRedirects as exc:
        raise ConversionError(f"{url}: too many redirects") from exc
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise ConversionError(f"{url}: invalid URL ({_reason(exc)})") from exc
    except httpx.HTTPError as exc:
        raise ConversionError(f"{url}: download failed ({_reason(exc)})") from exc
    # Keep the requested URL as the identity (re-adding it matches), but read suffixes from the final one.
    doc = convert_bytes(data, uri=final_url, content_type=content_type, limits=limits)
    return Fetched(dataclasses.replace(doc, uri=url), validators)


def _read_limited(response: httpx.Response, url: str, limits: IngestSettings) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limits.max_file_mb * 2**20:
            raise ConversionError(over_limit(url, size, "max_file_mb", limits.max_file_mb, "more than "))
        chunks.append(chunk)
    return b"".join(chunks)


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
