"""`get` and `delete` take a document by full id, unique id prefix, uri or the path it was added from."""

from __future__ import annotations

import json
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
    with pytest.raises(InputError, match="an id prefix needs 4 characters or more; 'abc' has 3"):
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


def test_a_chunk_is_named_by_a_unique_id_prefix_and_an_ambiguous_one_lists_the_candidates(
    make_db, cli, write_config, tmp_path: Path
) -> None:
    location, _ = make_db("notes", ["Kestrels hover over verges.", "Herons wait in the shallows."])
    db = open_database(location)
    chunks = sorted(db.chunks.to_arrow().select(["id", "document_id"]).to_pylist(), key=lambda r: r["id"])
    chosen = ["c0ffee11-0000-4000-8000-000000000001", "c0ffee22-0000-4000-8000-000000000002"]
    for row, new in zip(chunks, chosen, strict=True):
        db.chunks.update(where=f"id = '{row['id']}'", values={"id": new})
    write_config(f'[databases.notes]\nuri = "{location.uri}"\n')
    # `get --chunk` and `visualize` take the prefix as `get` takes a document's.
    part = cli("get", "--chunk", "C0FFEE1", "-d", "notes", "--json")
    assert part.exit_code == 0, part.stderr
    assert json.loads(part.stdout)["chunk_id"] == chosen[0]
    drawn = cli("visualize", "c0ffee2", "-d", "notes")
    assert drawn.exit_code != 0 and "only chunks of PDFs added from a local file" in drawn.stderr
    ambiguous = cli("get", "--chunk", "c0ffee", "-d", "notes")
    doc_of = {r["id"]: r["document_id"][:8] for r in chunks}
    first, second = (doc_of[r["id"]] for r in chunks)
    assert ambiguous.exit_code != 0
    assert ambiguous.stderr.startswith(
        "haiku: id prefix 'c0ffee' matches 2 chunks in database 'notes': "
        f"c0ffee11 (chunk 0 of document {first}), c0ffee22 (chunk 0 of document {second}); "
        "give more of the id"
    ), ambiguous.stderr
    too_short = cli("get", "--chunk", "c0f", "-d", "notes").stderr
    assert too_short == "haiku: an id prefix needs 4 characters or more; 'c0f' has 3\n"


def test_a_document_named_by_its_full_id_or_uri_is_read_in_one_query_with_its_content(
    make_db, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haiku_cli.databases import references
    from haiku_cli.store import reads

    location, ids = make_db("notes", [{"text": "Lanterns burn kerosene.", "title": "Lamps"}])
    uri = "https://example.org/lamps"
    open_database(location).documents.update(where=f"id = '{ids[0]}'", values={"uri": uri})
    db = open_database(location)
    asked: list[str | None] = []
    real = reads._query_rows

    def spy(db, table, where, columns, limit):
        if table is db.documents:
            asked.append(where)
        return real(db, table, where, columns, limit)

    monkeypatch.setattr(reads, "_query_rows", spy)
    found = anyio.run(lambda: references.document(db, location, ids[0]))
    assert found.content.startswith("Lanterns") and len(asked) == 1  # not an id check, then the content
    asked.clear()
    assert anyio.run(lambda: references.document(db, location, uri)).content.startswith("Lanterns")
    assert len(asked) == 2  # not an id; then its uri, with the content
