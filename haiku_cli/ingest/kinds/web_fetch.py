"""Fetching a page for the web kind: redirects are followed one hop at a time, and a public address is
never followed to a loopback, link-local or private one (a page on the internet must not make haiku read
a service on this machine or its network, such as a cloud's metadata address). Such an address given
directly is read: that is the user's choice. See docs/sources.md."""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
from typing import TYPE_CHECKING

from haiku_cli.config.settings import IngestSettings
from haiku_cli.errors import exception_reason
from haiku_cli.ingest.convert.dispatch import convert_bytes

# The download module's size and speed bounds, shared rather than copied (it follows redirects blindly).
from haiku_cli.ingest.convert.download import _USER_AGENT, Downloaded, _read_limited
from haiku_cli.ingest.convert.url import Fetched, Validators
from haiku_cli.ingest.document import ConversionError
from haiku_cli.ingest.kinds.base import Freshness

if TYPE_CHECKING:
    import httpx

_ACCEPT = "text/html, text/markdown, text/plain, */*;q=0.5"
MAX_REDIRECTS = 20  # httpx's own bound when it follows them


def fetch_if_changed(
    url: str, known: Validators | None = None, *, timeout: float = 30, limits: IngestSettings | None = None
) -> Fetched:
    """Download `url` and convert it, asking for the body only if it changed since `known` was sent
    (then the document is None); network and HTTP failures, and a refused redirect, raise ConversionError."""
    limits = limits or IngestSettings()
    known = known or Validators()
    got = _download(url, timeout=timeout, limits=limits, etag=known.etag, last_modified=known.last_modified)
    if got.data is None:
        return Fetched(None, known)
    # Keep the requested URL as the identity (re-adding it matches), but read suffixes from the final one.
    doc = convert_bytes(got.data, uri=got.url, content_type=got.content_type, limits=limits)
    return Fetched(dataclasses.replace(doc, uri=url), Validators(got.etag, got.last_modified))


def asked_page(url: str, known: Validators, timeout: float) -> tuple[Freshness, str | None]:
    """Whether a page changed since `known`, asked with a conditional request whose body is never read
    (304: fresh; the same ETag or Last-Modified: fresh; 404/410: missing); why when it could not be said."""
    import httpx

    if not (known.etag or known.last_modified):
        return Freshness.UNKNOWN, "no ETag or Last-Modified was stored to ask with"
    headers = {"User-Agent": _USER_AGENT, "Accept": _ACCEPT}
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


def _download(
    url: str, *, timeout: float, limits: IngestSettings, etag: str | None, last_modified: str | None
) -> Downloaded:
    import httpx

    if not url.lower().startswith(("http://", "https://")):
        raise ConversionError(f"{url}: not an http(s) URL")
    headers = {"User-Agent": _USER_AGENT, "Accept": _ACCEPT}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    try:
        with httpx.Client(follow_redirects=False, timeout=timeout, headers=headers) as client:
            response = _follow(client, url)
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


def _follow(client: httpx.Client, url: str) -> httpx.Response:
    """The response at the end of `url`'s redirects, each hop checked before it is requested."""
    public = is_public(_host(url))
    response = client.send(client.build_request("GET", url), stream=True)
    for _ in range(MAX_REDIRECTS):
        following = response.next_request
        if following is None:
            return response
        response.close()
        host = following.url.host
        if public and not is_public(host):
            raise ConversionError(
                f"{url}: redirected to {following.url}, a local or private address; haiku does not follow "
                "a public address there (add that address directly if you mean to read it)"
            )
        response = client.send(following, stream=True)
    response.close()
    raise ConversionError(f"{url}: too many redirects")


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).hostname or ""
