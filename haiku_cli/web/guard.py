"""Who may talk to `haiku serve`: this machine's names (or allowed ones) in Host and Origin, and the token."""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from haiku_cli.config.settings import MIN_TOKEN_CHARS, Settings
from haiku_cli.errors import InputError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_ENV = "HAIKU_SERVE_TOKEN"


def serve_token(settings: Settings) -> str | None:
    """`HAIKU_SERVE_TOKEN`, else the MCP server's token (`[mcp] http_token` / `HAIKU_MCP_TOKEN`), if any."""
    given = os.environ.get(TOKEN_ENV, "").strip()
    if not given:
        return settings.mcp.http_token
    if len(given) < MIN_TOKEN_CHARS:
        raise InputError(f"{TOKEN_ENV} must be at least {MIN_TOKEN_CHARS} characters long")
    return given


class Guard:
    """An ASGI wrapper refusing (403) a Host or Origin naming another site, as `haiku mcp --http` does
    against DNS rebinding, and (401) an API request without `Authorization: Bearer TOKEN` when one is set."""

    def __init__(self, app: ASGIApp, names: Sequence[str], token: str | None = None) -> None:
        self.app = app
        self._names = {name.lower() for name in names}
        self._token = token.encode() if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin", b"").decode("latin-1")
        if not self._accepts_host(host) or (origin and not self._accepts_host(urlsplit(origin).netloc)):
            await _refuse(send, 403, f"this server answers {', '.join(sorted(self._names))} only")
            return
        path = scope["path"]
        # The page and its script hold no data: the browser loads them before it knows the token.
        opened = path == "/" or path.startswith("/static/")
        if self._token is not None and not opened and not self._carries_token(headers):
            await _refuse(send, 401, "unauthorized: send the token as the header Authorization: Bearer TOKEN")
            return
        await self.app(scope, receive, send)

    def _accepts_host(self, netloc: str) -> bool:
        name = netloc.lower()
        if name.startswith("["):
            name = name[: name.find("]") + 1]
        else:
            name = name.rsplit(":", 1)[0] if name.count(":") == 1 else name
        return name in self._names

    def _carries_token(self, headers: dict[bytes, bytes]) -> bool:
        given = headers.get(b"authorization")
        if given is None or self._token is None:
            return False
        scheme, _, credentials = given.strip().partition(b" ")
        # Constant time: how long a refusal takes must not tell how much of the token matched.
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)


def _headers(scope: Scope) -> dict[bytes, bytes]:
    found: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        if name in found:  # a repeated Host, Origin or Authorization is ambiguous: treat it as missing
            found[name] = b""
        else:
            found[name] = value
    return found


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="haiku"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
