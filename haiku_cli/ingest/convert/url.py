"""Fetch a URL with httpx and convert the response by its content type."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from haiku_cli.ingest.convert.dispatch import convert_bytes
from haiku_cli.ingest.document import ConversionError, ConvertedDocument

if TYPE_CHECKING:
    import httpx

MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024
_USER_AGENT = "haiku-cli/0.1 (+local RAG ingest)"


def fetch_url(url: str, *, timeout: float = 30) -> ConvertedDocument:
    """Download `url` (redirects followed) and convert it; network or HTTP failures raise ConversionError."""
    import httpx

    if not url.lower().startswith(("http://", "https://")):
        raise ConversionError(f"{url}: not an http(s) URL")
    headers = {"User-Agent": _USER_AGENT, "Accept": "text/html, text/markdown, text/plain, */*;q=0.5"}
    try:
        with (
            httpx.Client(follow_redirects=True, timeout=timeout, headers=headers) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code >= 400:
                phrase = f" {response.reason_phrase}" if response.reason_phrase else ""
                raise ConversionError(f"{url}: HTTP {response.status_code}{phrase}")
            data = _read_limited(response, url)
            final_url = str(response.url)
            content_type = response.headers.get("content-type")
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
    doc = convert_bytes(data, uri=final_url, content_type=content_type)
    return dataclasses.replace(doc, uri=url)


def _read_limited(response: httpx.Response, url: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_DOWNLOAD_BYTES:
            raise ConversionError(f"{url}: larger than {MAX_DOWNLOAD_BYTES // (1024 * 1024)} MB")
        chunks.append(chunk)
    return b"".join(chunks)


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
