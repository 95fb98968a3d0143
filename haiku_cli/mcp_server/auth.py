"""An optional bearer token for `haiku mcp --http`: requests without it are refused before they are read."""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

_REFUSED = b'{"error": "unauthorized: send the token as the header Authorization: Bearer TOKEN"}'


class BearerToken:
    """An ASGI wrapper that answers 401 to every HTTP request not carrying `Authorization: Bearer TOKEN`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._carries_token(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(_REFUSED)).encode()),
                        (b"www-authenticate", b'Bearer realm="haiku"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": _REFUSED})
            return
        await self.app(scope, receive, send)

    def _carries_token(self, scope: Scope) -> bool:
        given = [value for name, value in scope["headers"] if name == b"authorization"]
        if len(given) != 1:
            return False
        scheme, _, credentials = given[0].strip().partition(b" ")
        # Compared in constant time: how long a refusal takes must not tell how much of the token matched.
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)
