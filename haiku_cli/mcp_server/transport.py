"""Serving the MCP server over stdio (what desktop and editor clients launch) or streamable HTTP."""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from haiku_cli.errors import InputError
from haiku_cli.mcp_server.auth import BearerToken
from haiku_cli.mcp_server.tools import ServerScope

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

PATH = "/mcp"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


async def serve_stdio(server: MCPServer) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    await server.run_stdio_async()


async def serve_http(
    server: MCPServer,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    allow_hosts: Sequence[str] = (),
    token: str | None = None,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve streamable HTTP on host:port (port 0 picks a free one), announcing the URL once listening.

    Requests whose Host or Origin header names another site are refused (DNS rebinding); with a
    `token`, so is every request without `Authorization: Bearer <token>` (401).
    """
    import uvicorn

    sock = listen(host, port)
    port = sock.getsockname()[1]
    url = f"http://{announced(host)}:{port}{PATH}"
    app: Any = server.streamable_http_app(
        streamable_http_path=PATH, transport_security=security_settings(host, allow_hosts), host=host
    )
    if token is not None:
        app = BearerToken(app, token)
    _refusals_in_one_line()
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    if announce is not None:
        announce(url)
    await uvicorn.Server(config).serve(sockets=[sock])


class _RefusalLine(logging.Formatter):
    """A refused Host or Origin as one plain haiku line (the SDK's own handler draws it over two)."""

    def format(self, record: logging.LogRecord) -> str:
        said = record.getMessage()
        return f"haiku: refused a request: {said[:1].lower()}{said[1:]} (another host name: --allow-host)"


def _refusals_in_one_line() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RefusalLine())
    refusals = logging.getLogger("mcp.server.transport_security")
    refusals.handlers = [handler]
    refusals.propagate = False


def security_settings(host: str, allow_hosts: Sequence[str] = ()) -> TransportSecuritySettings:
    """Host and Origin headers accepted: loopback names, the bound address and any allowed host names."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = accepted_names(host, allow_hosts)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in names],
        allowed_origins=[f"{scheme}://{name}:*" for name in names for scheme in ("http", "https")],
    )


def accepted_names(host: str, allow_hosts: Sequence[str] = ()) -> list[str]:
    """The host names a client may use in Host and Origin: loopback, the bound address, allowed names."""
    names = list(LOOPBACK_NAMES)
    for extra in (host, *allow_hosts):
        name = _bracketed(extra)
        if not _is_wildcard(extra) and name not in names:
            names.append(name)
    return names


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port; a taken port or unknown host is one clear `InputError`."""
    # Bound before serving, so a taken port is one clear line and port 0 can be announced as the real one.
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError(f"cannot listen on '{host}': unknown host ({exc.strerror})") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InputError(
            f"cannot listen on {_bracketed(host)}:{port}: {exc.strerror or exc}; choose another --port"
        ) from exc
    sock.setblocking(False)
    return sock


def _bracketed(host: str) -> str:
    host = host.strip("[]")
    return f"[{host}]" if ":" in host else host


def announced(host: str) -> str:
    """The host of the URL to print: one this server's own Host check accepts.

    A wildcard address is where to listen, not a name to connect to (its Host header is refused): this
    machine reaches it on loopback; other machines use a name given with --allow-host.
    """
    if _is_wildcard(host):
        return "[::1]" if ":" in host else "127.0.0.1"
    return _bracketed(host)


def _is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("0.0.0.0", "::", "")


async def serve(
    scope: ServerScope,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    allow_hosts: Sequence[str] = (),
    token: str | None = None,
    announce: Callable[[str], None] | None = None,
) -> None:
    """`haiku mcp`: serve the scope's databases over stdio, or over streamable HTTP when `http`."""
    # Imported here: `haiku serve` shares this module's listening, and needs none of the MCP SDK.
    from haiku_cli.mcp_server.sdk_import import require_sdk

    require_sdk("http" if http else "stdio")  # before `server` imports any of it
    from haiku_cli.mcp_server.server import build_server

    server = build_server(scope)
    if not http:
        await serve_stdio(server)
        return
    await serve_http(server, host=host, port=port, allow_hosts=allow_hosts, token=token, announce=announce)
