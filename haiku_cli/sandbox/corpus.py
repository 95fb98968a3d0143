"""The sandbox `analyze` uses: the selection's documents mounted read-only, plus search and list_documents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.sandbox.catalog import DocumentCatalog
from haiku_cli.sandbox.host_functions import HitsSeen, HostFunctions
from haiku_cli.sandbox.mount import PATH_CALLS, DocumentMount
from haiku_cli.sandbox.runner import Sandbox, open_sandbox


@asynccontextmanager
async def open_corpus_sandbox(
    ws: Workspace,
    selection: Selection,
    *,
    document_filter: str | None = None,
    on_hits: HitsSeen | None = None,
) -> AsyncIterator[Sandbox]:
    """A sandbox for one question over `selection`, with the limits from the workspace's settings."""
    catalog = DocumentCatalog(ws.pool, selection, document_filter=document_filter)
    mount = DocumentMount(catalog)
    host = HostFunctions(ws, selection, catalog, document_filter=document_filter, on_hits=on_hits)
    async with open_sandbox(
        ws.settings.sandbox, host.mapping(), mount, PATH_CALLS, host_notes=host.take_notes
    ) as sandbox:
        yield sandbox
