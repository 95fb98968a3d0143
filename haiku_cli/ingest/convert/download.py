"""Downloading over http(s) with httpx, stopped once a download passes the `[ingest]` size limit."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from haiku_cli.config.settings import IngestSettings
from haiku_cli.errors import exception_reason
from haiku_cli.ingest.convert.limits import over_limit
from haiku_cli.ingest.document import ConversionError

if TYPE_CHECKING:
    import httpx

_USER_AGENT = "haiku-cli/0.1 (+local RAG ingest)"


def download(
    url: str, *, timeout: float, limits: IngestSettings, accept: str = "*/*"
) -> tuple[bytes, str, str | None]:
    """The bytes, final URL and content type of `url`; failures and downloads over the limit raise
    ConversionError."""
    got = download_if_changed(url, timeout=timeout, limits=limits, accept=accept)
    return got.data or b"", got.url, got.content_type


@dataclass(frozen=True)
class Downloaded:
    """What a server sent: the body (None when it answered "not modified"), where from, and what
    identifies this version of it for a conditional request later (ETag, Last-Modified)."""

    data: bytes | None
    url: str
    content_type: str | None = None
    etag: str | None = None
    last_modified: str | None = None


def download_if_changed(
    url: str,
    *,
    timeout: float,
    limits: IngestSettings,
    accept: str = "*/*",
    etag: str | None = None,
    last_modified: str | None = None,
) -> Downloaded:
    """`download`, asking for the body only if it changed since the version `etag`/`last_modified` name."""
    import httpx

    if not url.lower().startswith(("http://", "https://")):
        raise ConversionError(f"{url}: not an http(s) URL")
    headers = {"User-Agent": _USER_AGENT, "Accept": accept}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    try:
        with (
            httpx.Client(follow_redirects=True, timeout=timeout, headers=headers) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code == 304 and (etag or last_modified):
                return Downloaded(None, str(response.url), etag=etag, last_modified=last_modified)
            if response.status_code >= 400:
                phrase = f" {response.reason_phrase}" if response.reason_phrase else ""
                raise ConversionError(f"{url}: HTTP {response.status_code}{phrase}")
            data = _read_limited(response, url, limits, timeout)
            got = response.headers
            return Downloaded(
                data, str(response.url), got.get("content-type"), got.get("etag"), got.get("last-modified")
            )
    except httpx.TimeoutException as exc:
        raise ConversionError(f"{url}: timed out after {timeout:g}s") from exc
    except httpx.ConnectError as exc:
        raise ConversionError(f"{url}: cannot connect ({exception_reason(exc)})") from exc
    except httpx.TooManyRedirects as exc:
        raise ConversionError(f"{url}: too many redirects") from exc
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise ConversionError(f"{url}: invalid URL ({exception_reason(exc)})") from exc
    except httpx.HTTPError as exc:
        raise ConversionError(f"{url}: download failed ({exception_reason(exc)})") from exc


# Past the timeout, a download must average this much: a server sending a byte now and then never lets
# the per-read timeout run out, and would otherwise hold the command until the size limit (64 MB).
MIN_BYTES_PER_SECOND = 16 * 1024


def _read_limited(response: httpx.Response, url: str, limits: IngestSettings, timeout: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    start = time.monotonic()
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limits.max_file_mb * 2**20:
            raise ConversionError(over_limit(url, size, "max_file_mb", limits.max_file_mb, "more than "))
        chunks.append(chunk)
        elapsed = time.monotonic() - start
        if elapsed > timeout and size < MIN_BYTES_PER_SECOND * elapsed:
            rate = size / elapsed
            raise ConversionError(
                f"{url}: too slow ({rate:.0f} bytes/s after {elapsed:.0f} s; at least "
                f"{MIN_BYTES_PER_SECOND // 1024} KB/s is needed once {timeout:g} s have passed)"
            )
    return b"".join(chunks)
