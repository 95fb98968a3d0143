"""Index upkeep as writes accumulate: delta segments merged, key columns indexed, old versions dropped."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from haiku_cli.store import (
    DocumentRecord,
    DocumentWrite,
    EmbedderSpec,
    Location,
    NewChunk,
    indexes,
    open_database,
    reads,
)
from haiku_cli.store.database import PENDING_WRITE, Database
from haiku_cli.store.maintenance import cleanup_superseded, vacuum
from haiku_cli.store.writes import new_id, write_documents

DIM = 8


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(Location("t", str(tmp_path / "t.lancedb")), create_with=EmbedderSpec("t:e", DIM))


def _add(db: Database, n_docs: int, chunks_each: int, seed: int) -> list[DocumentWrite]:
    rng = np.random.default_rng(seed)
    writes = []
    for d in range(n_docs):
        now = datetime.now(UTC)
        name = f"s{seed}d{d}"
        doc = DocumentRecord(
            id=new_id(), uri=f"file:///{name}", title=name, content=name, content_hash=name,
            created_at=now, updated_at=now,
        )  # fmt: skip
        chunks = [
            NewChunk(order=i, text=f"{name} piece {i}", vector=rng.standard_normal(DIM).tolist())
            for i in range(chunks_each)
        ]
        writes.append(DocumentWrite(document=doc, chunks=chunks))
    write_documents(db, writes)
    return writes


def _vector_segments(db: Database) -> int:
    return next(s.segments for s in indexes.index_states(db.chunks) if s.name == indexes.VECTOR_INDEX)


def test_delta_segments_are_merged_once_past_the_bound(db: Database, monkeypatch) -> None:
    monkeypatch.setattr(indexes, "VECTOR_INDEX_MIN_ROWS", 300)
    monkeypatch.setattr(indexes, "MAX_VECTOR_SEGMENTS", 3)
    _add(db, 30, 10, seed=0)
    assert _vector_segments(db) == 1
    counts = []
    for seed in range(1, 5):
        last = _add(db, 2, 10, seed=seed)
        counts.append(_vector_segments(db))
    assert counts == [2, 3, 1, 2]  # the write that made a fourth segment rebuilt the index as one
    # Every row stays findable through the rebuilt index: a chunk's own vector finds it first.
    target = last[-1].chunks[3]
    found = db.chunks.search(np.asarray(target.vector), vector_column_name="vector").distance_type("cosine")
    assert found.select(["text"]).limit(1).to_list()[0]["text"] == target.text


def test_vacuum_merges_every_index_into_one_segment(db: Database, monkeypatch) -> None:
    monkeypatch.setattr(indexes, "VECTOR_INDEX_MIN_ROWS", 300)
    _add(db, 30, 10, seed=0)
    _add(db, 2, 10, seed=1)
    assert _vector_segments(db) == 2
    vacuum(db)
    assert _vector_segments(db) == 1
    assert all(s.unindexed_rows == 0 for s in indexes.index_states(db.chunks))


def test_lookups_by_id_and_uri_are_indexed(db: Database) -> None:
    writes = _add(db, 5, 2, seed=0)
    assert {"id_idx", "document_id_idx"} <= {i.name for i in db.chunks.list_indices()}
    assert {"id_idx", "uri_idx"} <= {i.name for i in db.documents.list_indices()}
    later = _add(db, 5, 2, seed=1)  # rows written after the indexes exist are found too
    for w in (writes[2], later[4]):
        assert reads.find_by_uri(db, w.document.uri).id == w.document.id
        assert len(reads.chunks_of(db, w.document.id)) == 2
    assert set(reads.get_documents(db, [writes[0].document.id, later[1].document.id])) == {
        writes[0].document.id,
        later[1].document.id,
    }


def _oldest_versions(db: Database) -> list[int]:
    return [min(v["version"] for v in t.list_versions()) for t in (db.documents, db.chunks, db.meta_table)]


def test_superseded_versions_are_dropped_after_the_bound(db: Database) -> None:
    for seed in range(3):
        _add(db, 1, 1, seed=seed)
    oldest = _oldest_versions(db)
    cleanup_superseded(db)  # the default bound keeps versions a reader may still hold
    assert _oldest_versions(db) == oldest
    time.sleep(0.3)
    cleanup_superseded(db, keep=timedelta(0))
    assert all(now > then for now, then in zip(_oldest_versions(db), oldest, strict=True))
    assert len(reads.list_documents(db)) == 3  # the live version is intact


def test_no_cleanup_while_a_write_is_pending(db: Database) -> None:
    for seed in range(3):
        _add(db, 1, 1, seed=seed)
    db.set_meta(PENDING_WRITE, json.dumps({"documents": 1, "chunks": 1}))
    oldest = _oldest_versions(db)
    time.sleep(0.3)
    cleanup_superseded(db, keep=timedelta(0))
    assert _oldest_versions(db) == oldest  # undoing that write needs its old versions
