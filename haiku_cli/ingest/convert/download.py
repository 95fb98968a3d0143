"""Downloading over http(s) with httpx, stopped once a download passes the `[ingest]` size limit.

Redirects are followed one hop at a time, and a public address is never followed to a loopback,
link-local or private one: a page on the internet must not make haiku read a service on this machine or
its network (a cloud's metadata address, say), neither by redirecting there nor by linking a picture
there. Such an address given directly is read, and may redirect on its own network: that is the user's
choice. See docs/sources.md.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from haiku_cli.config.settings import IngestSettings
from haiku_cli.errors import exception_reason
from haiku_cli.ingest.convert.limits import over_limit
from haiku_cli.ingest.document import ConversionError

if TYPE_CHECKING:
    import httpx

USER_AGENT = "haiku-cli/0.1 (+local RAG ingest)"
MAX_REDIRECTS = 20  # httpx's own bound when it follows them
_NOT_FOLLOWED = (
    "haiku does not follow a public address there (add that address directly if you mean to read it)"
)


def download(
    url: str, *, timeout: float, limits: IngestSettings, accept: str = "*/*", linked_from: str | None = None
) -> tuple[bytes, str, str | None]:
    """The bytes, final URL and content type of `url`; failures, a refused redirect or link
    (`linked_from`: the page that links it) and downloads over the limit raise ConversionError."""
    got = download_if_changed(url, timeout=timeout, limits=limits, accept=accept, linked_from=linked_from)
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
    linked_from: str | None = None,
) -> Downloaded:
    """`download`, asking for the body only if it changed since the version `etag`/`last_modified` name."""
    import httpx

    if not url.lower().startswith(("http://", "https://")):
        raise ConversionError(f"{url}: not an http(s) URL")
    headers = {"User-Agent": USER_AGENT, "Accept": accept}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    # A link from a page is a hop like a redirect: a public page's link is checked before it is read.
    public = is_public(_host(linked_from or url))
    if linked_from is not None and public and not is_public(_host(url)):
        raise ConversionError(f"{url}: a local or private address linked from {linked_from}; {_NOT_FOLLOWED}")
    try:
        with httpx.Client(follow_redirects=False, timeout=timeout, headers=headers) as client:
            response = _follow(client, url, public=public)
            try:
                if response.status_code == 304 and (etag or last_modified):
                    return Downloaded(None, str(response.url), etag=etag, last_modified=last_modified)
                if response.status_code >= 400:
                    phrase = f" {response.reason_phrase}" if response.reason_phrase else ""
                    raise ConversionError(f"{url}: HTTP {response.status_code}{phrase}")
                data = _read_limited(response, url, limits, timeout)
                got = response.headers
                return Downloaded(
                    data,
                    str(response.url),
                    got.get("content-type"),
                    got.get("etag"),
                    got.get("last-modified"),
                )
            finally:
                response.close()
    except httpx.TimeoutException as exc:
        raise ConversionError(f"{url}: timed out after {timeout:g}s") from exc
    except httpx.ConnectError as exc:
        raise ConversionError(f"{url}: cannot connect ({exception_reason(exc)})") from exc
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise ConversionError(f"{url}: invalid URL ({exception_reason(exc)})") from exc
    except httpx.HTTPError as exc:
        raise ConversionError(f"{url}: download failed ({exception_reason(exc)})") from exc


def _follow(client: httpx.Client, url: str, *, public: bool) -> httpx.Response:
    """The response at the end of `url`'s redirects, each hop checked before it is requested (`public`:
    whether what led here, the URL itself or the page linking it, is on a public address)."""
    response = client.send(client.build_request("GET", url), stream=True)
    for _ in range(MAX_REDIRECTS):
        following = response.next_request
        if following is None:
            return response
        response.close()
        if public and not is_public(following.url.host):
            raise ConversionError(
                f"{url}: redirected to {following.url}, a local or private address; {_NOT_FOLLOWED}"
            )
        response = client.send(following, stream=True)
    response.close()
    raise ConversionError(f"{url}: too many redirects")


def is_public(host: str) -> bool:
    """Whether every address a host name (or address) stands for is a global one; a name that does not
    resolve counts as public (the request then fails on its own)."""
    try:
        addresses = [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return True
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    return all(_global(a) for a in addresses)


def _global(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


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
