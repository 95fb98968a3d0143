"""`get` and `delete` take a document by full id, unique id prefix, uri or the path it was added from."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from haiku_cli.databases import operations
from haiku_cli.databases.short_ids import short_ids
from haiku_cli.errors import InputError
from haiku_cli.store.database import open_database


def _get(ws, location, reference: str) -> str:
    return anyio.run(lambda: operations.get_document(ws, location, reference)).document.id


def _renamed(location, ids: list[str], new: list[str]) -> None:
    """Give documents chosen ids, so that prefixes collide on purpose."""
    db = open_database(location)
    for old, chosen in zip(ids, new, strict=True):
        db.documents.update(where=f"id = '{old}'", values={"id": chosen})


def test_a_unique_prefix_names_its_document_and_an_ambiguous_one_lists_the_candidates(
    make_db, workspace
) -> None:
    location, ids = make_db("notes", [{"text": t, "title": t} for t in ("alpha", "beta", "gamma")])
    chosen = [
        "abcd1234-0000-4000-8000-000000000001",
        "abcd1299-0000-4000-8000-000000000002",
        "ef01" + ids[2][4:],
    ]
    _renamed(location, ids, chosen)
    ws = workspace()
    assert _get(ws, location, "ef01") == chosen[2]
    assert _get(ws, location, "ABCD1234") == chosen[0]  # pasted in capitals
    with pytest.raises(InputError) as raised:
        _get(ws, location, "abcd12")
    message = str(raised.value)
    assert message == (
        "id prefix 'abcd12' matches 2 documents in database 'notes': abcd1234 (alpha), abcd1299 (beta); "
        "give more of the id"
    )
    with pytest.raises(InputError, match="no document with id, id prefix, uri or path 'abc'"):
        _get(ws, location, "abc")  # shorter than git takes


def test_a_uri_or_the_path_it_was_added_from_names_the_document(
    workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haiku_cli.store.location import Location

    note = tmp_path / "field notes.md"
    note.write_text("# Notes\n\nLanterns burn kerosene.\n", encoding="utf-8")
    ws, location = workspace(), Location("notes", str(tmp_path / "notes.lancedb"))
    report = anyio.run(lambda: operations.add_sources(ws, location, [str(note)], title=None, metadata={}))
    doc_id = report.outcomes[0].document_id
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for reference in (
        note.as_uri(),
        str(note),
        "field notes.md",
        f"./{note.name}",
        "~/field notes.md",
        f" {note.as_uri()}\n",
    ):
        assert _get(ws, location, reference) == doc_id, reference
    gone = anyio.run(lambda: operations.delete_document(ws, location, os.path.relpath(note)))
    assert gone.document.id == doc_id and gone.chunks == 1
    with pytest.raises(InputError, match="no document"):
        _get(ws, location, str(note))


def test_short_ids_grow_until_the_shown_ids_differ() -> None:
    ids = ["abcdef12-aaaa", "abcdef12-bbbb", "99999999-cccc"]
    assert short_ids(ids) == {
        "abcdef12-aaaa": "abcdef12-a",
        "abcdef12-bbbb": "abcdef12-b",
        "99999999-cccc": "99999999-c",
    }
    assert short_ids(["12345678-x"]) == {"12345678-x": "12345678"}
