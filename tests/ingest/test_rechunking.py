"""Rebuilding against a real database: batched, all-or-nothing, and identical chunks keep their ids."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest

from haiku_cli.errors import DatabaseError, ModelError
from haiku_cli.ingest import pipeline, rechunking
from haiku_cli.store import open_database, reads
from haiku_cli.store.blocking import wait
from tests.ingest.support import (
    FailingAfter,
    Recording,
    chunks_by_id,
    docs_folder,
    new_db,
    sections,
    vectors_by_id,
)
from tests.support.resized_embedder import Resized


def _chunk_texts(db) -> list[str]:
    return sorted(r["text"] for r in db.chunks.to_arrow().select(["text"]).to_pylist())


def test_a_rebuild_embeds_and_writes_in_batches(tmp_path: Path, embedder, monkeypatch) -> None:
    db = new_db(tmp_path, embedder)
    folder = docs_folder(tmp_path, 7)
    anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    before = _chunk_texts(db)
    monkeypatch.setattr(rechunking, "BATCH_CHUNKS", 2)
    recording = Recording(embedder)
    recording.name = "another:model"  # vectors of another embedder are never reused: all embedded anew
    assert anyio.run(lambda: rechunking.rebuild(db, recording)).chunks == 7
    assert recording.calls == [2, 2, 2, 1]  # never the whole database in one call
    assert open_database(db.location).embedder.name == "another:model"
    again = open_database(db.location)
    assert _chunk_texts(again) == before and again.chunks_table_name != "chunks"
    hit = again.chunks.search(np.asarray(anyio.run(embedder.embed_query, "topic number 5")))
    assert "number 5" in hit.limit(1).to_list()[0]["text"]


def test_a_rebuild_that_fails_part_way_leaves_the_database_as_it_was(
    tmp_path: Path, embedder, monkeypatch
) -> None:
    db = new_db(tmp_path, embedder)
    folder = docs_folder(tmp_path, 7)
    anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    before, tables = _chunk_texts(db), sorted(db.conn.list_tables().tables)
    monkeypatch.setattr(rechunking, "BATCH_CHUNKS", 2)
    failing = FailingAfter(embedder, 2)
    failing.name = "another:model"  # so that every chunk is embedded anew (none keeps its vector)
    with pytest.raises(ModelError):
        anyio.run(lambda: rechunking.rebuild(db, failing))
    again = open_database(db.location)
    assert again.chunks_table_name == "chunks" and _chunk_texts(again) == before
    assert sorted(again.conn.list_tables().tables) == tables  # the half-built table is gone


@pytest.mark.parametrize("layout", ["current", "v1"])
def test_a_rebuild_of_an_unchanged_database_keeps_every_document_and_chunk_id(
    tmp_path: Path, embedder, monkeypatch, layout: str
) -> None:
    db = new_db(tmp_path, embedder, layout)
    folder = docs_folder(tmp_path, 5)
    (folder / "long.md").write_text(sections(2, 30, 2))  # several chunks, one section cut in pieces
    repeated = " ".join(f"Sentence {j} says the same." for j in range(20))  # over half a chunk
    (folder / "twice.md").write_text(f"# Same\n\n{repeated}\n\n{repeated}\n")  # two identical chunks
    anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    before, documents = chunks_by_id(db), wait(reads.list_documents(db, limit=None))
    assert len(before) == 11 and len({text for _, text, _ in before.values()}) == 10
    monkeypatch.setattr(rechunking, "BATCH_CHUNKS", 3)  # ids are kept across batches too
    monkeypatch.setattr(rechunking, "_REBUILD_DOCUMENTS", 2)
    assert anyio.run(lambda: rechunking.rebuild(db, embedder)) == (11, 11)  # chunks, of which kept ids
    again = open_database(db.location)
    assert chunks_by_id(again) == before
    assert wait(reads.list_documents(again, limit=None)) == documents
    # Each chunk was written again (in the current layout), not carried over.
    assert again.chunks_table_name != "chunks" and "document_title" in again.chunks.schema.names


def test_a_rebuild_with_a_smaller_chunk_size_gives_new_ids_only_to_changed_chunks(
    tmp_path: Path, embedder
) -> None:
    db = new_db(tmp_path, embedder)
    # Part 0 is long and is cut anew at the smaller size; parts 1 and 2 fit either size, and stay.
    anyio.run(lambda: pipeline.add_text(db, embedder, sections(30, 2, 3), title="Parts", metadata={}))
    before = {text: id_ for id_, (_, text, _) in chunks_by_id(db).items()}
    rebuilt = anyio.run(lambda: rechunking.rebuild(db, Resized(embedder, max_tokens=96)))
    after = {text: id_ for id_, (_, text, _) in chunks_by_id(open_database(db.location)).items()}
    unchanged = before.keys() & after.keys()
    assert rebuilt == (len(after), len(unchanged)) and rebuilt.chunks > len(before)
    assert {t for t in unchanged if " of part 0 " not in t} == {t for t in before if " of part 0 " not in t}
    assert len(unchanged) < len(before) < len(after)  # part 0 was cut differently
    assert all(after[t] == before[t] for t in unchanged)  # even where their order changed
    assert not set(before.values()) & {after[t] for t in after.keys() - unchanged}  # changed: new ids
    # Back to the first size: the chunks that were identical at both sizes still have their first ids.
    anyio.run(lambda: rechunking.rebuild(db, embedder))
    final = {text: id_ for id_, (_, text, _) in chunks_by_id(open_database(db.location)).items()}
    assert final.keys() == before.keys()
    assert {t for t in final if final[t] == before[t]} == unchanged


def test_a_rebuild_with_the_same_embedder_and_chunking_embeds_nothing(
    tmp_path: Path, embedder, monkeypatch
) -> None:
    db = new_db(tmp_path, embedder)
    folder = docs_folder(tmp_path, 5)
    (folder / "long.md").write_text(sections(2, 30, 2))
    anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    before = vectors_by_id(db)
    monkeypatch.setattr(rechunking, "BATCH_CHUNKS", 3)
    monkeypatch.setattr(rechunking, "_REBUILD_DOCUMENTS", 2)
    recording = Recording(embedder)
    assert anyio.run(lambda: rechunking.rebuild(db, recording)) == (len(before), len(before))
    assert recording.calls == []  # every stored vector was made from the very text it would embed
    again = open_database(db.location)
    assert vectors_by_id(again) == before and again.chunks_table_name != "chunks"


def test_a_rebuild_with_a_new_chunk_size_embeds_only_the_changed_chunks(tmp_path: Path, embedder) -> None:
    db = new_db(tmp_path, embedder)
    anyio.run(lambda: pipeline.add_text(db, embedder, sections(30, 2, 3), title="Parts", metadata={}))
    note = "# Note\n\nA short note about apples.\n\n# More\n\nAnd one about pears."
    anyio.run(lambda: pipeline.add_text(db, embedder, note, title="Short", metadata={}))
    before = {text: (id_, v) for id_, v, text in _rows(db)}
    recording = Recording(embedder)
    rebuilt = anyio.run(lambda: rechunking.rebuild(db, Resized(recording, max_tokens=96)))
    after = {text: (id_, v) for id_, v, text in _rows(open_database(db.location))}
    assert len(after) == len(_rows(open_database(db.location)))  # no text in two chunks
    changed = after.keys() - before.keys()
    assert changed and rebuilt.chunks == len(after) > len(before)
    assert sum(recording.calls) == len(changed)  # the unchanged chunks (of both documents) kept theirs
    assert all(after[t] == before[t] for t in after.keys() & before.keys())
    # The new chunks' vectors are the embedder's for their text, as an add would make them.
    text = next(iter(changed))
    assert np.allclose(
        after[text][1], anyio.run(embedder.embed_documents, [_embedded(db, text)])[0], atol=1e-5
    )


def _rows(db) -> list[tuple[str, list[float], str]]:
    rows = db.chunks.to_arrow().select(["id", "vector", "text"]).to_pylist()
    return [(r["id"], r["vector"], r["text"]) for r in rows]


def _embedded(db, text: str) -> str:
    rows = open_database(db.location).chunks.to_arrow().select(["text", "search_text"]).to_pylist()
    return next(r["search_text"] for r in rows if r["text"] == text)


@pytest.mark.parametrize("failure", [KeyboardInterrupt, DatabaseError])
def test_a_rebuild_cut_short_after_its_switch_keeps_the_rebuilt_table(
    tmp_path: Path, embedder, monkeypatch, failure: type[BaseException]
) -> None:
    # Ctrl-C (or a failure) in the upkeep after the switching commit: the rebuild is stored, and its
    # new table is the live one. It was dropped as a failed rebuild's: the database no longer opened
    # ("Table 'chunks_...' was not found"), every chunk gone.
    from haiku_cli.store import maintenance

    db = new_db(tmp_path, embedder)
    folder = docs_folder(tmp_path, 3)
    anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    before = _chunk_texts(db)

    def cut(point: str, spec: str | None = None) -> None:
        if point == "committed":
            raise failure("database 'x' cannot be written: the disk is full")

    monkeypatch.setattr(maintenance, "checkpoint", cut)
    with pytest.raises(failure):
        anyio.run(lambda: rechunking.rebuild(db, embedder))
    again = open_database(db.location)
    assert again.chunks_table_name != "chunks"  # the rebuilt table
    assert _chunk_texts(again) == before
    assert len(wait(reads.list_documents(again, limit=None))) == 3


def test_a_rebuild_whose_old_table_cannot_be_dropped_is_still_stored(
    tmp_path: Path, embedder, monkeypatch
) -> None:
    # After the switching commit the rebuild is stored: a failure to drop the old table is no failure of
    # the rebuild (it said "cannot be rebuilt" of a stored rebuild); the stray goes with the next vacuum.
    from haiku_cli.store import maintenance
    from haiku_cli.store.handle import table_names

    db = new_db(tmp_path, embedder)
    anyio.run(
        lambda: pipeline.add_sources(db, embedder, [str(docs_folder(tmp_path, 3))], title=None, metadata={})
    )
    before, old = _chunk_texts(db), db.chunks_table_name
    connection = type(db.conn)
    drop = connection.drop_table

    def refuse(self, name: str, *args, **kwargs):  # the store refuses to drop the replaced table
        if name == old:
            raise OSError("the store refused")
        return drop(self, name, *args, **kwargs)

    monkeypatch.setattr(connection, "drop_table", refuse)
    anyio.run(lambda: rechunking.rebuild(db, embedder))
    monkeypatch.setattr(connection, "drop_table", drop)
    again = open_database(db.location, writable=True)
    assert again.chunks_table_name != old and _chunk_texts(again) == before
    assert old in table_names(again.conn)
    maintenance.vacuum(again)
    assert old not in table_names(open_database(db.location).conn)
