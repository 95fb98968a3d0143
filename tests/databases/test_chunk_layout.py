"""Hits carry their documents' uri, title and metadata, from chunk rows (schema 2) or looked up (schema 1)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from haiku_cli.databases import operations
from haiku_cli.databases.selection import Selection
from haiku_cli.search.bm25 import query_words
from haiku_cli.search.candidates import find_candidates
from haiku_cli.search.lookups import Reads
from haiku_cli.store import DocumentRecord, DocumentWrite, Location, NewChunk, open_database, reads, schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import refresh_reader
from haiku_cli.store.document_writes import new_id, write_documents
from haiku_cli.store.indexes import analyze
from tests.conftest import fill
from tests.support.old_layout import create_v1_database, create_v2_database, create_v3_database

NOTES = [
    {"text": "The espresso machine needs descaling every month.", "title": "Coffee", "metadata": {"a": 1}},
    {"text": "Espresso grinders drift; recalibrate the burrs.", "metadata": {"tags": ["ü", "x"]}},
    {"text": "Sourdough starter must be fed daily, like an espresso habit."},
]
QUERY = "espresso machine grinders sourdough"
KINDS = ("hybrid", "vector", "fts")


def _add_file(ws, location: Location, tmp_path: Path) -> None:
    path = tmp_path / "brewing.md"
    path.write_text("# Brewing\n\nEspresso brewing ratios: one to two, in thirty seconds.\n")
    anyio.run(lambda: operations.add_sources(ws, location, [str(path)], title=None, metadata={"src": "file"}))


def _hits(ws, location: Location) -> dict[str, list[tuple]]:
    """Per search type, every hit as a user sees it (the chunk's id aside: a rebuild gives new ids)."""
    out = {}
    selection = Selection((location,))
    for kind in KINDS:
        hits = anyio.run(lambda kind=kind: operations.search_hits(ws, selection, QUERY, search_type=kind))
        out[kind] = [
            (h.rank, h.document_id, h.document_uri, h.document_title, h.metadata, h.content, h.heading_path)
            for h in hits
        ]
    return out


def _assert_hits_match_documents(location: Location, hits: dict[str, list[tuple]]) -> None:
    db = open_database(location)
    docs = {d.id: d for d in wait(reads.list_documents(db, limit=None))}
    assert {h[1] for h in hits["hybrid"]} == set(docs)  # every document is found
    for kind_hits in hits.values():
        for _, document_id, uri, title, metadata, *_ in kind_hits:
            doc = docs[document_id]
            assert (uri, title, metadata) == (doc.uri, doc.title, doc.metadata)


def _carry_documents(location: Location) -> bool:
    """Whether the candidates of a search come with their documents' fields (no lookup to make hits)."""
    db = open_database(location)
    cands = find_candidates(db, query="espresso", query_vector=None, search_type="fts", k=10)
    return bool(cands) and all(c.document is not None for c in cands)


def test_a_new_databases_hits_carry_its_documents_fields(make_db, workspace, tmp_path: Path) -> None:
    location, _ = make_db("notes", NOTES)
    ws = workspace()
    _add_file(ws, location, tmp_path)
    assert open_database(location).schema_version == schema.SCHEMA_VERSION == 4
    assert _carry_documents(location)
    hits = _hits(ws, location)
    _assert_hits_match_documents(location, hits)
    assert any(h[2] and h[2].endswith("brewing.md") and h[4] == {"src": "file"} for h in hits["fts"])


@pytest.fixture
def v1_database(workspace, embedder, tmp_path: Path) -> Location:
    """A schema-version-1 database holding NOTES and a file, added by this haiku."""
    location = Location("old", str(tmp_path / "old.lancedb"))
    create_v1_database(location, embedder.name, embedder.dimension)
    ws = workspace()
    fill(ws, location, NOTES)
    _add_file(ws, location, tmp_path)
    return location


def test_an_old_layout_database_is_searched_written_and_upgraded_by_rebuild(v1_database, workspace) -> None:
    ws = workspace()
    old = open_database(v1_database)
    assert old.schema_version == 1 and not old.chunks_carry_documents
    assert wait(reads.count_documents(old)) == 4  # it took the adds, in rows its table accepts
    assert not _carry_documents(v1_database)
    before = _hits(ws, v1_database)
    _assert_hits_match_documents(v1_database, before)
    info = anyio.run(lambda: operations.info(ws, v1_database))
    assert info.schema_version == 1 and "haiku vacuum" in (info.upgrade or "")
    # Configured read_only, the database would refuse that vacuum: info does not send the user there.
    locked = dataclasses.replace(v1_database, read_only=True)
    locked_info = anyio.run(lambda: operations.info(workspace(), locked))
    upgrade = locked_info.upgrade or ""
    assert "older layout" in upgrade and "haiku vacuum" not in upgrade
    assert locked_info.read_only and not info.read_only

    anyio.run(lambda: operations.rebuild(ws, v1_database))
    new = open_database(v1_database)
    assert new.schema_version == 4 and new.chunks_carry_documents
    assert anyio.run(lambda: operations.info(ws, v1_database)).upgrade is None
    assert _carry_documents(v1_database)
    assert _hits(ws, v1_database) == before


def _chunk_ids(ws, location: Location) -> list[str]:
    selection = Selection((location,))
    return [
        h.chunk_id for h in anyio.run(lambda: operations.search_hits(ws, selection, QUERY, search_type="fts"))
    ]


def test_vacuum_upgrades_an_old_layout_in_place_without_re_embedding(
    v1_database, workspace, tmp_path
) -> None:
    ws = workspace()
    # A long-running process (MCP, chat) that opened the database before the upgrade.
    running = open_database(v1_database)
    assert not running.chunks_carry_documents
    before, ids = _hits(ws, v1_database), _chunk_ids(ws, v1_database)

    report = anyio.run(lambda: operations.vacuum(workspace(), v1_database))
    assert report.upgraded_layout
    db = open_database(v1_database)
    assert db.schema_version == 4 and _carry_documents(v1_database)
    assert anyio.run(lambda: operations.info(workspace(), v1_database)).upgrade is None
    fresh = workspace()
    assert _hits(fresh, v1_database) == before
    assert _chunk_ids(fresh, v1_database) == ids  # the same chunks: saved citations still resolve
    _assert_hits_match_documents(v1_database, before)

    # The older process's next write lands in the new layout, its document's fields with it (not nulls).
    text = "Espresso tamping pressure matters less than grind."
    now = datetime.now(UTC)
    doc = DocumentRecord(
        id=new_id(), uri=None, title="Tamping", content=text, content_hash="t", created_at=now, updated_at=now
    )
    chunk = NewChunk(order=0, text=text, vector=[0.1] * running.embedder.dimension)
    running.read_at = 0.0  # its last look at the store is old: it catches up, as a pooled handle does
    refresh_reader(running)
    write_documents(running, [DocumentWrite(document=doc, chunks=[chunk])])
    written = open_database(v1_database).chunks.search().where(f"document_id = '{doc.id}'")
    written = written.select(["document_title"]).to_list()
    assert [r["document_title"] for r in written] == ["Tamping"]
    assert not anyio.run(lambda: operations.vacuum(workspace(), v1_database)).upgraded_layout


def _spans(ws, location: Location) -> list[tuple]:
    selection = Selection((location,))
    hits = anyio.run(lambda: operations.search_hits(ws, selection, QUERY, search_type="fts"))
    return [(h.document_uri, h.char_start, h.char_end, h.line_start, h.line_end) for h in hits]


def test_a_version_2_database_is_read_written_and_upgraded_with_its_chunks_places_unknown(
    workspace, embedder, tmp_path: Path
) -> None:
    location = Location("two", str(tmp_path / "two.lancedb"))
    create_v2_database(location, embedder.name, embedder.dimension)
    ws = workspace()
    fill(ws, location, NOTES)
    _add_file(ws, location, tmp_path)  # written in the rows its table takes
    old = open_database(location)
    assert old.schema_version == 2 and old.chunks_carry_documents and not old.chunks_carry_spans
    assert "haiku vacuum" in (anyio.run(lambda: operations.info(ws, location)).upgrade or "")
    assert all(s[1:] == (None,) * 4 for s in _spans(ws, location))
    ids = _chunk_ids(ws, location)

    assert anyio.run(lambda: operations.vacuum(workspace(), location)).upgraded_layout
    db = open_database(location)
    assert db.schema_version == 4 and db.chunks_carry_spans
    assert _chunk_ids(workspace(), location) == ids  # nothing re-cut or re-embedded
    # Each chunk found again in its document's text: its characters are known now, its source lines not
    # (the stored text does not say how many lines of its file came before it).
    assert all(s[1] is not None and s[3:] == (None, None) for s in _spans(workspace(), location))
    path = tmp_path / "brewing.md"
    path.write_text("# Brewing\n\n\nEspresso brewing ratios changed: one to three.\n")
    # A re-added document's chunks say where they stand.
    anyio.run(lambda: operations.add_sources(workspace(), location, [str(path)], title=None, metadata={}))
    placed = [s for s in _spans(workspace(), location) if s[0] and s[0].endswith("brewing.md")]
    assert placed == [(path.as_uri(), 12, 58, 4, 4)]


def test_a_new_databases_hits_say_where_they_stand(make_db, workspace, tmp_path: Path) -> None:
    location, _ = make_db("notes", NOTES[:1])
    _add_file(workspace(), location, tmp_path)
    spans = dict((s[0], s[1:]) for s in _spans(workspace(), location))
    assert spans[None] == (0, len(NOTES[0]["text"]), 1, 1)
    brewing = next(uri for uri in spans if uri and uri.endswith("brewing.md"))
    assert spans[brewing] == (11, 66, 3, 3)


def _split_fts(ws, locations: list[Location]) -> list[tuple]:
    selection = Selection(tuple(locations))
    hits = anyio.run(lambda: operations.search_hits(ws, selection, QUERY, search_type="fts", limit=10))
    return [(h.database, h.chunk_id, round(h.score, 5)) for h in hits]


def test_version_3_databases_are_rescored_alike_before_and_after_vacuum_stores_their_terms(
    workspace, embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = [Location(f"v3_{i}", str(tmp_path / f"v3_{i}.lancedb")) for i in range(2)]
    for i, location in enumerate(parts):
        create_v3_database(location, embedder.name, embedder.dimension)
        fill(workspace(), location, NOTES[i::2])
    assert not open_database(parts[0]).chunks_carry_terms
    assert "analyses" in (anyio.run(lambda: operations.info(workspace(), parts[0])).upgrade or "")
    analysed: list[int] = []
    analyse = Reads.analyze

    async def counted(self: Reads, db, texts):
        analysed.append(len(texts))
        return await analyse(self, db, texts)

    monkeypatch.setattr(Reads, "analyze", counted)
    before = _split_fts(workspace(), parts)
    words = len(query_words(QUERY))
    # The query, the candidates' text in one call, and the query's words only where a term is looked up.
    assert before and sorted(analysed) in (sorted([1, len(before)]), sorted([1, words, len(before)]))

    for location in parts:
        assert anyio.run(lambda loc=location: operations.vacuum(workspace(), loc)).upgraded_layout
    db = open_database(parts[0])
    assert db.schema_version == 4 and db.chunks_carry_terms
    stored = db.chunks.search().select(["search_text", schema.TERMS_FIELD]).to_list()
    assert all(
        r[schema.TERMS_FIELD].split() == wait(analyze(db.chunks, [r["search_text"]]))[0] for r in stored
    )
    analysed.clear()
    assert _split_fts(workspace(), parts) == before
    # Only the query (and its words where a term is looked up): the candidates' terms are read with them.
    assert sorted(analysed) in ([1], sorted([1, words]))
