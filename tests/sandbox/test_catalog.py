"""The /documents view reads what a concurrent vacuum left; a store that fails it is an OSError naming it."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

import anyio
import pytest

from haiku_cli.databases import operations
from haiku_cli.databases.selection import Selection
from haiku_cli.sandbox.catalog import DocumentCatalog
from haiku_cli.sandbox.mount import DocumentMount


def _listed(make_db, workspace):
    loc, ids = make_db("notes", [f"Note {i} about owls." for i in range(3)])
    ws, selection = workspace(), Selection((loc,))
    mount = DocumentMount(DocumentCatalog(ws.pool, selection))

    async def first_look() -> None:
        await mount.handle("Path.iterdir", (PurePosixPath("/documents"),), {})
        for db in await ws.pool.clients_covering(selection):
            db.read_at = float("inf")  # the handle is trusted, as in the second after it looked

    anyio.run(first_look)
    return loc, ids, mount


def _read(mount: DocumentMount, path: str) -> str:
    return anyio.run(lambda: mount.handle("Path.read_text", (PurePosixPath(path),), {}))


def test_document_files_read_after_another_handles_vacuum_removed_their_version(make_db, workspace) -> None:
    loc, ids, mount = _listed(make_db, workspace)
    anyio.run(lambda: operations.vacuum(workspace(), loc))
    assert _read(mount, f"/documents/{ids[1]}/content.txt") == "Note 1 about owls."
    assert '"text": "Note 2 about owls."' in _read(mount, f"/documents/{ids[2]}/chunks.jsonl")


def test_a_store_that_fails_a_document_read_is_an_os_error_naming_it(
    make_db, workspace, tmp_path: Path
) -> None:
    _, ids, mount = _listed(make_db, workspace)
    shutil.rmtree(tmp_path / "notes.lancedb" / "documents.lance" / "data")
    with pytest.raises(
        OSError, match=r"^database 'notes' cannot be read: some of its data files are missing"
    ):
        _read(mount, f"/documents/{ids[0]}/content.txt")
