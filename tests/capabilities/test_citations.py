"""Citation lookups read what a concurrent vacuum left, and a store that fails them is exit 3, named."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from haiku_cli.capabilities.citations import resolve_citations
from haiku_cli.databases import operations
from haiku_cli.databases.selection import Selection
from haiku_cli.errors import DatabaseError, ExitCode


def _cited(make_db, workspace):
    loc, _ = make_db("notes", [f"Note {i} about owls and the night sky." for i in range(3)])
    ws, selection = workspace(), Selection((loc,))

    async def first_look() -> list[str]:
        hits = await operations.search_hits(ws, selection, "owls", search_type="fts")
        for db in await ws.pool.clients_covering(selection):
            db.read_at = float("inf")  # the handle is trusted, as in the second after it looked
        return [h.chunk_id for h in hits]

    return loc, ws, selection, anyio.run(first_look)


def test_citations_resolve_after_another_handles_vacuum_removed_their_version(make_db, workspace) -> None:
    loc, ws, selection, chunk_ids = _cited(make_db, workspace)
    anyio.run(lambda: operations.vacuum(workspace(), loc))
    found = anyio.run(lambda: resolve_citations(ws.pool, selection, chunk_ids))
    assert sorted(found.found) == sorted(chunk_ids) and not found.missing
    assert all(f.chunk.text.startswith("Note") for f in found.found.values())


def test_a_store_that_fails_a_citation_lookup_is_a_database_error(make_db, workspace, tmp_path: Path) -> None:
    _, _, selection, chunk_ids = _cited(make_db, workspace)
    shutil.rmtree(tmp_path / "notes.lancedb" / "chunks.lance" / "data")
    # A fresh process's handle: the one that searched may still hold the rows it read in memory.
    ws = workspace()
    with pytest.raises(DatabaseError) as failed:
        anyio.run(lambda: resolve_citations(ws.pool, selection, chunk_ids))
    assert failed.value.exit_code == ExitCode.DATABASE
    assert str(failed.value).startswith("database 'notes' cannot be read: ")
