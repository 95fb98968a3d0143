"""Importing the MCP SDK without what `haiku mcp` never needs before its first answer.

`import mcp.server.mcpserver` defines ~550 pydantic models (every message of every protocol era, for
client and server) and imports the whole HTTP stack (starlette, uvicorn, sse-starlette, httpx2, OAuth,
OpenTelemetry) and the client, even for a server on stdio: together more CPU than a whole cold
`haiku search`. So, while the SDK is imported here:

- pydantic builds no model's or type adapter's validator and serializer (`defer_build`): each is built on
  its first use, as pydantic does for any configured so; a server's first answers use a few dozen models
  and none of the SDK's six module-level adapters over every message of a side;
- for `haiku mcp`, the parts its server never runs (the client, fetching URLs, the legacy SSE transport,
  OAuth routes) and, on stdio, the HTTP stack are registered un-executed, by the same mechanism as
  LanceDB's unused parts (`haiku_cli.store.lance_import.import_deferring`): a name the SDK takes from
  them is a stand-in that imports the module on first use. Only modules whose names the SDK takes as
  classes or functions: a stand-in for a constant would be a wrong default value (a test holds this).

Nothing else changes, and a release importing differently still works: at worst a stand-in is resolved
at once and the import costs what it did. If the import fails with modules deferred, it is retried the
ordinary way. `HAIKU_MCP_IMPORT=plain` turns all of this off.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Literal

from haiku_cli.errors import InputError
from haiku_cli.store.lance_import import import_deferring

SERVER_MODULE = "mcp.server.mcpserver"
SWITCH = "HAIKU_MCP_IMPORT"
Serving = Literal["stdio", "http"]
MISSING_SDK = (
    "haiku mcp needs the MCP SDK: install it with pip install 'mcp>=2.3,<3' "
    "(or pip install '.[mcp]' in haiku's checkout)"
)

# Modules whose names are handed out as stand-ins until first used (parents before children): those no
# server of haiku's needs (the client side, fetching URLs, the legacy SSE transport, OAuth routes)...
UNSERVED_MODULES = (
    "httpx2",
    "mcp.server.auth.routes",
    "mcp.server.sse",
    "mcp.client",
    "mcp.client.client",
    "mcp.client.session",
    "mcp.client.session_group",
)
# ...and those a server on stdio never needs: serving HTTP.
HTTP_MODULES = (
    "starlette.applications",
    "starlette.middleware",
    "starlette.middleware.authentication",
    "starlette.routing",
    "sse_starlette",
    "uvicorn",
)


def deferral_enabled() -> bool:
    """Whether the deferral is on (`HAIKU_MCP_IMPORT=plain` turns it off)."""
    return os.environ.get(SWITCH, "").strip().lower() != "plain"


@contextlib.contextmanager
def deferred_model_builds() -> Iterator[None]:
    """While in this block, pydantic models and type adapters defer their build to their first use.

    As `defer_build` in their configuration would; models or adapters configured otherwise keep their
    setting. A no-op when pydantic keeps its defaults elsewhere than this release does.
    """
    try:
        from pydantic import TypeAdapter
        from pydantic._internal import _config
    except ImportError:
        yield
        return
    defaults = getattr(_config, "config_defaults", None)
    adapters = TypeAdapter.__dict__.get("_defer_build")
    if not isinstance(defaults, dict) or defaults.get("defer_build") is not False:
        yield
        return
    defaults["defer_build"] = True
    if isinstance(adapters, property):
        # An adapter defers when its configuration says so; a module-level adapter over a union of
        # models has none, and building it builds every member (the SDK has six over every message).
        setattr(TypeAdapter, "_defer_build", property(lambda adapter: True))  # noqa: B010
    try:
        yield
    finally:
        defaults["defer_build"] = False
        if isinstance(adapters, property):
            setattr(TypeAdapter, "_defer_build", adapters)  # noqa: B010


def import_sdk(serving: Serving | None = None) -> ModuleType:
    """The SDK's `mcp.server.mcpserver`, its models built on first use; without the parts a server
    `serving` stdio or HTTP never runs (see the module's text). Called before anything imports the SDK."""
    if SERVER_MODULE in sys.modules or not deferral_enabled():
        return importlib.import_module(SERVER_MODULE)
    unused = {None: (), "http": UNSERVED_MODULES, "stdio": HTTP_MODULES + UNSERVED_MODULES}[serving]
    with deferred_model_builds():
        return import_deferring(SERVER_MODULE, (), unused)


def require_sdk(serving: Serving | None = None) -> None:
    """Import the SDK (see `import_sdk`); one line naming the extra when it (version 2) is not installed."""
    try:
        import_sdk(serving)
    except ImportError as exc:
        raise InputError(MISSING_SDK) from exc
