"""Index upkeep as writes accumulate: delta segments merged, key columns indexed, old versions dropped."""

from __future__ import annotations

import json
import threading
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
    facts,
    indexes,
    maintenance,
    open_database,
    reads,
    vector_segments,
)
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import PENDING_WRITE, Database
from haiku_cli.store.doctor import check_database
from haiku_cli.store.document_writes import delete_document, new_id, write_documents
from haiku_cli.store.maintenance import cleanup_superseded, vacuum
from haiku_cli.store.new_chunks_table import NewChunksTable
from haiku_cli.store.reads import in_list, sql_string
from haiku_cli.store.writer_lock import exclusive
from tests.support.single_chunks import WORDS

DIM = 8


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(Location("t", str(tmp_path / "t.lancedb")), create_with=EmbedderSpec("t:e", DIM))


def _add(db: Database, n_docs: int, chunks_each: int, seed: int) -> list[DocumentWrite]:
    writes = _writes(n_docs, chunks_each, seed)
    write_documents(db, writes)
    return writes


def _writes(n_docs: int, chunks_each: int, seed: int) -> list[DocumentWrite]:
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
            NewChunk(
                order=i,
                text=f"{name} piece {i} {' '.join(rng.choice(WORDS, size=4))}",
                vector=rng.standard_normal(DIM).tolist(),
            )
            for i in range(chunks_each)
        ]
        writes.append(DocumentWrite(document=doc, chunks=chunks))
    return writes


def _vector_segments(db: Database) -> int:
    return next(s.segments for s in wait(indexes.index_states(db.chunks)) if s.name == indexes.VECTOR_INDEX)


def _needs_lance() -> None:
    # A checkout installed before pylance became a dependency: say so rather than fail on its absence.
    pytest.importorskip("lance", reason="pylance is a dependency now: pip install -e '.[test]'")


def _finds_itself(db: Database, chunk: NewChunk) -> bool:
    # Through the index, as broad as a search reaches and re-ranked on the stored vectors (as haiku's own
    # vector search does): quantised 8-dimension vectors otherwise tie with near neighbours now and then.
    found = (
        db.chunks.search(np.asarray(chunk.vector), vector_column_name="vector")
        .distance_type("cosine")
        .nprobes(64)
        .ef(512)
        .refine_factor(10)
    )
    return found.select(["text"]).limit(1).to_list()[0]["text"] == chunk.text


def test_small_writes_merge_new_segments_among_themselves_not_the_index(
    db: Database, monkeypatch, capfd
) -> None:
    _needs_lance()
    monkeypatch.setattr(indexes, "VECTOR_INDEX_MIN_ROWS", 300)
    _add(db, 100, 10, seed=0)
    assert indexes.segment_rows(db.chunks, indexes.VECTOR_INDEX) == [1000]
    written, segments = [], []
    for seed in range(1, 16):
        written += _add(db, 2 if seed % 3 else 5, 10, seed=seed)
        sizes = indexes.segment_rows(db.chunks, indexes.VECTOR_INDEX)
        segments.append(len(sizes))
        # The index over the first 1,000 rows is never rebuilt by these small writes: each one pays for
        # its own rows and for merging the other new segments, not for the whole table.
        assert sizes[0] == 1000
        assert sum(sizes) == db.chunks.count_rows()
        # The full-text index likewise: new rows are a segment of their own, the first 1,000 stay as built.
        text_sizes = indexes.segment_rows(db.chunks, indexes.FTS_INDEX)
        assert text_sizes[0] == 1000 and sum(text_sizes) == db.chunks.count_rows()
        assert len(text_sizes) <= 1 + indexes.MAX_INDEX_DELTAS
    assert max(segments) == 1 + indexes.MAX_INDEX_DELTAS  # bounded, where it grew by one per write
    assert segments[-1] < len(segments)
    # The B-trees over the chunk keys likewise: the first 1,000 rows' segment stays, the rest bounded.
    for key in indexes.CHUNK_KEYS:
        key_sizes = indexes.segment_rows(db.chunks, f"{key}_idx")
        assert key_sizes[0] == 1000 and sum(key_sizes) == db.chunks.count_rows(), key_sizes
        assert len(key_sizes) <= 1 + indexes.MAX_INDEX_DELTAS
    # Every write's rows stay findable through the merged segments.
    assert all(_finds_itself(db, w.chunks[3]) for w in written)
    assert "centroids" not in capfd.readouterr().err  # Lance's notices stay off the user's terminal


def test_the_index_is_rebuilt_as_one_once_new_rows_reach_half_of_it(db: Database, monkeypatch) -> None:
    _needs_lance()
    monkeypatch.setattr(indexes, "VECTOR_INDEX_MIN_ROWS", 300)
    _add(db, 40, 10, seed=0)
    sizes = []
    for seed in range(1, 5):
        last = _add(db, 5, 10, seed=seed)
        sizes.append(indexes.segment_rows(db.chunks, indexes.VECTOR_INDEX))
    # 50, 100 and 150 new rows sit beside the 400 indexed first; at 200 (half) the index is rebuilt.
    assert sizes == [[400, 50], [400, 50, 50], [400, 50, 50, 50], [600]]
    assert _finds_itself(db, last[2].chunks[7])


def test_without_lance_the_index_is_rebuilt_past_a_segment_count(db: Database, monkeypatch) -> None:
    # LanceDB alone can merge all segments or none: past MAX_VECTOR_SEGMENTS it rebuilds the index.
    # As if pylance were not installed (hiding the module itself would break LanceDB's own imports).
    monkeypatch.setattr(indexes, "lance_dataset", lambda chunks: None)
    monkeypatch.setattr(indexes, "VECTOR_INDEX_MIN_ROWS", 300)
    monkeypatch.setattr(indexes, "MAX_VECTOR_SEGMENTS", 3)
    _add(db, 30, 10, seed=0)
    assert indexes.segment_rows(db.chunks, indexes.VECTOR_INDEX) is None
    assert _vector_segments(db) == 1
    counts = []
    for seed in range(1, 5):
        last = _add(db, 2, 10, seed=seed)
        counts.append(_vector_segments(db))
    assert counts == [2, 3, 1, 2]  # the write that made a fourth segment rebuilt the index as one
    assert all(s.segments == 1 for s in wait(indexes.index_states(db.documents)))
    assert _finds_itself(db, last[-1].chunks[3])


def test_a_merge_lance_refuses_falls_back_to_the_rebuild_rule(db: Database, monkeypatch) -> None:
    # pylance is a second engine beside LanceDB's: if it cannot merge, the write still succeeds and the
    # segments stay bounded by LanceDB's own rule.
    _needs_lance()
    monkeypatch.setattr(indexes, "VECTOR_INDEX_MIN_ROWS", 300)
    monkeypatch.setattr(indexes, "MAX_INDEX_DELTAS", 1)
    monkeypatch.setattr(indexes, "MAX_VECTOR_SEGMENTS", 3)
    _add(db, 100, 10, seed=0)

    class Refusing:
        def __init__(self, dataset: object) -> None:
            self.stats = dataset.stats  # type: ignore[attr-defined]

        @property
        def optimize(self) -> object:
            raise OSError("unsupported index version")

    real = indexes.lance_dataset
    monkeypatch.setattr(indexes, "lance_dataset", lambda chunks: Refusing(real(chunks)))
    counts = []
    for seed in range(1, 5):
        last = _add(db, 2, 10, seed=seed)
        counts.append(_vector_segments(db))
    assert counts == [2, 3, 1, 2]  # the write that made a fourth segment rebuilt the index as one
    assert _finds_itself(db, last[-1].chunks[3])


def _vector_segment_files(db: Database) -> dict[str, int]:
    """Each vector segment's id with its rows, as Lance lists them."""
    dataset = indexes.lance_dataset(db.chunks)
    live = {f.fragment_id: f.metadata.num_rows for f in dataset.get_fragments()}
    (described,) = [d for d in dataset.describe_indices() if d.name == indexes.VECTOR_INDEX]
    return {str(seg.uuid): sum(live.get(i, 0) for i in seg.fragment_ids) for seg in described.segments}


def test_the_vector_index_is_built_and_grown_in_segments_of_bounded_size(db: Database, monkeypatch) -> None:
    # One graph over a large table holds all of it in memory at once (~2.5 KB a row): the index is
    # built a group of files at a time, each a segment of at most SEGMENT_ROWS, and grown likewise.
    _needs_lance()
    monkeypatch.setattr(vector_segments, "SEGMENT_ROWS", 250)
    monkeypatch.setattr(indexes, "VECTOR_INDEX_MIN_ROWS", 600)
    monkeypatch.setattr(indexes, "MAX_FRAGMENTS", 100)  # one file per write, as written
    written = [w for seed in range(11) for w in _add(db, 5, 10, seed=seed)]
    assert indexes.VECTOR_INDEX not in {i.name for i in db.chunks.list_indices()}
    written += _add(db, 5, 10, seed=11)  # the 600th row: the first build, in three segments
    first = _vector_segment_files(db)
    assert sorted(first.values()) == [100, 250, 250]
    full = {uuid for uuid, rows in first.items() if rows == 250}
    for seed in range(12, 24):
        written += _add(db, 5, 10, seed=seed)
        segments = _vector_segment_files(db)
        # A write indexes its own rows with the small segments: the full ones stay as built.
        assert full <= set(segments)
        assert all(rows <= 250 for rows in segments.values())
        assert sum(segments.values()) == db.chunks.count_rows()
        assert len(segments) <= vector_segments.most_segments(db.chunks.count_rows())
        assert all(s.unindexed_rows == 0 for s in wait(indexes.index_states(db.chunks)))
    assert sorted(segments.values()) == [50, 150, 250, 250, 250, 250]
    assert all(_finds_itself(db, w.chunks[3]) for w in written[::7])
    assert next(c for c in check_database(db, None, Path) if c.check == "indexes").status == "ok"
    vacuum(db)  # every small segment merged, none larger than the bound
    assert all(rows <= 250 for rows in _vector_segment_files(db).values())
    assert all(_finds_itself(db, w.chunks[3]) for w in written[::11])


def test_compaction_keeps_files_within_a_segments_bound(db: Database, monkeypatch) -> None:
    # A segment covers whole files, so compacting may not make a file larger than one.
    _needs_lance()
    monkeypatch.setattr(vector_segments, "SEGMENT_ROWS", 1200)
    monkeypatch.setattr(indexes, "MAX_FRAGMENTS", 4)
    for seed in range(20):
        _add(db, 10, 10, seed=seed)
    files = _fragments(db.chunks)
    assert sum(files) == 2000 and max(files) <= 1200 and len(files) < 6, files


def _full_text(db: Database, query: str) -> list[tuple[float, str]]:
    found = db.chunks.search(query, query_type="fts", fts_columns="search_text").select(["text", "_score"])
    return sorted((round(r["_score"], 4), r["text"]) for r in found.limit(10_000).to_list())


def test_full_text_segments_score_exactly_as_one_index(db: Database) -> None:
    # Small writes index their rows as full-text segments of their own (not a rewrite of the whole
    # index); BM25 over the segments must find and score every chunk as the merged index does.
    _needs_lance()
    _add(db, 40, 5, seed=0)
    for seed in range(1, 4):
        _add(db, 2, 5, seed=seed)
    assert indexes.segment_rows(db.chunks, indexes.FTS_INDEX) == [200, 10, 10, 10]
    queries = ["river", "delta flood", "tide marsh silt", "s2d1 piece", "bank current bank"]
    segmented = [_full_text(db, q) for q in queries]
    vacuum(db)
    assert indexes.segment_rows(db.chunks, indexes.FTS_INDEX) == [230]
    assert [_full_text(db, q) for q in queries] == segmented
    assert all(segmented)


def _fragments(table) -> list[int]:
    return [f.count_rows() for f in table.to_lance().get_fragments()]


def test_writes_leave_existing_files_alone_until_they_pile_up(db: Database, monkeypatch) -> None:
    # Compacting at every write would rewrite the whole table each time (what LanceDB's optimize does);
    # a write's file is kept as it is until there are more than MAX_FRAGMENTS, then they are merged.
    _needs_lance()
    monkeypatch.setattr(indexes, "MAX_FRAGMENTS", 4)
    _add(db, 20, 2, seed=0)
    counts = []
    for seed in range(1, 6):
        _add(db, 1, 2, seed=seed)
        counts.append(_fragments(db.documents))
    assert counts[:3] == [[20, 1], [20, 1, 1], [20, 1, 1, 1]]
    # A fifth file made them too many, but Lance merges only files the same index segments cover: the
    # small files are merged once their B-tree segments are (the next write, past MAX_INDEX_DELTAS).
    assert counts[3:] == [[20, 1, 1, 1, 1], [20, 5]]
    assert len(_fragments(db.chunks)) <= 4 + 1
    assert wait(reads.count_documents(db)) == 25 and db.chunks.count_rows() == 50


def test_vacuum_merges_every_index_into_one_segment(db: Database, monkeypatch) -> None:
    monkeypatch.setattr(indexes, "VECTOR_INDEX_MIN_ROWS", 300)
    _add(db, 30, 10, seed=0)
    _add(db, 2, 10, seed=1)
    assert _vector_segments(db) == 2
    vacuum(db)
    assert _vector_segments(db) == 1
    assert all(s.unindexed_rows == 0 for s in wait(indexes.index_states(db.chunks)))
    for table in (db.chunks, db.documents):  # the B-trees too
        states = wait(indexes.index_states(table))
        assert all(s.segments == 1 for s in states), states


def test_lookups_by_id_and_uri_are_indexed(db: Database) -> None:
    writes = _add(db, 5, 2, seed=0)
    assert {"id_idx", "document_id_idx"} <= {i.name for i in db.chunks.list_indices()}
    assert {"id_idx", "uri_idx"} <= {i.name for i in db.documents.list_indices()}
    later = _add(db, 5, 2, seed=1)  # rows written after the indexes exist are found too
    for w in (writes[2], later[4]):
        assert wait(reads.find_by_uri(db, w.document.uri)).id == w.document.id
        assert len(wait(reads.chunks_of(db, w.document.id))) == 2
    assert set(wait(reads.get_documents(db, [writes[0].document.id, later[1].document.id]))) == {
        writes[0].document.id,
        later[1].document.id,
    }
    # The filters get_documents, find_by_uri (each file during ingest) and chunks_of run are answered
    # from the B-tree indexes, not by reading every row.
    ids = [writes[0].document.id, later[1].document.id]
    for table, where, index in (
        (db.documents, in_list("id", ids), "id_idx"),
        (db.documents, f"uri = {sql_string(later[4].document.uri)}", "uri_idx"),
        (db.chunks, f"document_id = {sql_string(later[4].document.id)}", "document_id_idx"),
        (db.chunks, in_list("id", ["a", "b"]), "id_idx"),
    ):
        plan = table.search().where(where).explain_plan(True)
        assert f"@{index}(BTree)" in plan and "ScalarIndexQuery" in plan, plan


def _uriless(writes: list[DocumentWrite]) -> list[DocumentWrite]:
    # Text added without a uri (stdin, a note) is recognised again by its content's hash alone.
    return [w.model_copy(update={"document": w.document.model_copy(update={"uri": None})}) for w in writes]


def test_the_duplicate_check_of_text_without_a_uri_is_indexed(db: Database) -> None:
    first = _uriless(_writes(5, 2, seed=0))
    write_documents(db, first)
    assert "content_hash_idx" in {i.name for i in db.documents.list_indices()}
    later = _uriless(_writes(5, 2, seed=1))  # written after the index exists: folded into it
    write_documents(db, later)
    assert not [s for s in wait(indexes.index_states(db.documents)) if s.unindexed_rows]
    for w in (first[1], later[3]):
        assert wait(reads.find_by_hash(db, w.document.content_hash)).id == w.document.id
    assert wait(reads.find_by_hash(db, "no such content")) is None
    where = f"uri IS NULL AND content_hash = {sql_string(later[3].document.content_hash)}"
    plan = db.documents.search().where(where).explain_plan(True)
    assert "@content_hash_idx(BTree)" in plan and "ScalarIndexQuery" in plan, plan


def _oldest_versions(db: Database) -> list[int]:
    return [min(v["version"] for v in t.list_versions()) for t in (db.documents, db.chunks, db.meta_table)]


def _wait_for_the_wall_clock_past(db: Database, margin: timedelta) -> None:
    """Wait until the wall clock reads `margin` past the newest version's stamp.

    Versions are stamped, and cut, by the wall clock; a fixed sleep counts monotonic time, which an
    adjusted wall clock (a busy virtual machine's) does not follow, so it is the clock that is watched.
    """
    newest = max(v["timestamp"] for t in (db.documents, db.chunks, db.meta_table) for v in t.list_versions())
    while datetime.now(tz=newest.tzinfo) < newest + margin:
        time.sleep(0.05)


def test_superseded_versions_are_dropped_after_the_bound(db: Database) -> None:
    for seed in range(3):
        _add(db, 1, 1, seed=seed)
    # Few enough versions that only the time bound applies (the count bound has its own test below).
    assert max(_version_counts(db)) <= maintenance.MAX_VERSIONS
    oldest = _oldest_versions(db)
    cleanup_superseded(db)  # the default bound keeps versions a reader may still hold
    assert _oldest_versions(db) == oldest
    # Past the cut's 100 ms margin, every superseded version is older than the bound of 0.
    _wait_for_the_wall_clock_past(db, timedelta(milliseconds=300))
    cleanup_superseded(db, keep=timedelta(0))
    assert all(now > then for now, then in zip(_oldest_versions(db), oldest, strict=True))
    assert len(wait(reads.list_documents(db))) == 3  # the live version is intact


def _version_counts(db: Database) -> list[int]:
    return [len(t.list_versions()) for t in (db.documents, db.chunks, db.meta_table)]


def test_many_writes_keep_versions_and_size_bounded_without_vacuum(db: Database, monkeypatch) -> None:
    # A burst of small adds: past MAX_VERSIONS a table's versions go once superseded for the reader
    # grace (here none, so the bound shows within a test); without it they would pile up for an hour.
    monkeypatch.setattr(maintenance, "MAX_VERSIONS", 6)
    monkeypatch.setattr(maintenance, "READER_GRACE", timedelta(0))
    monkeypatch.setattr(indexes, "MAX_FRAGMENTS", 4)  # files are compacted within the test too
    counts, sizes = [], []
    for seed in range(20):
        _add(db, 1, 5, seed=seed)
        counts.append(max(_version_counts(db)))
        sizes.append(wait(maintenance.database_info(db)).size_bytes)
    # Versions written within the cut's 100 ms margin stay too; unbounded this reaches about 80.
    assert max(counts[8:]) <= 3 * 6
    # Unbounded the size grows with every write (about 3x over the last 12 here).
    assert max(sizes[8:]) < 2 * max(sizes[:8])
    assert len(wait(reads.list_documents(db))) == 20
    assert [len(wait(reads.chunks_of(db, d.id))) for d in wait(reads.list_documents(db))] == [5] * 20


def test_a_reader_of_a_recent_version_reads_it_after_a_burst_of_writes(db: Database, monkeypatch) -> None:
    monkeypatch.setattr(maintenance, "MAX_VERSIONS", 3)  # the reader grace keeps its default
    first = _add(db, 2, 3, seed=0)
    reader = open_database(db.location)
    held = reader.chunks.version
    for seed in range(1, 12):
        _add(db, 1, 3, seed=seed)
    assert max(_version_counts(db)) > 3  # the bound applies only to versions older than the grace
    assert reader.chunks.version == held
    assert [c.text for c in wait(reads.chunks_of(reader, first[1].document.id))] == [
        c.text for c in first[1].chunks
    ]


def test_no_cleanup_while_a_write_is_pending(db: Database, monkeypatch) -> None:
    monkeypatch.setattr(maintenance, "MAX_VERSIONS", 1)
    monkeypatch.setattr(maintenance, "READER_GRACE", timedelta(0))
    for seed in range(3):
        _add(db, 1, 1, seed=seed)
    db.set_meta(PENDING_WRITE, json.dumps({"documents": 1, "chunks": 1}))
    oldest = _oldest_versions(db)
    time.sleep(0.3)
    cleanup_superseded(db, keep=timedelta(0))
    assert _oldest_versions(db) == oldest  # undoing that write needs its old versions


def test_info_counts_the_size_while_another_process_removes_files(db: Database) -> None:
    # A concurrent write's version cleanup deletes files while `info` is adding up the folder's size:
    # a file gone by the time it is looked at must not fail the read ("data files are missing").
    _add(db, 3, 2, seed=0)
    churn = db.location.local_path / "chunks.lance" / "_versions" / "churn"
    churn.mkdir()
    stop = threading.Event()

    def remove_files() -> None:
        i = 0
        while not stop.is_set():
            f = churn / f"old-{i % 20}.manifest"
            f.write_bytes(b"x" * 64)
            f.unlink()
            i += 1

    remover = threading.Thread(target=remove_files)
    remover.start()
    try:
        sizes = [wait(maintenance.database_info(db)).size_bytes for _ in range(300)]
    finally:
        stop.set()
        remover.join()
    assert all(size and size > 0 for size in sizes)


def _rebuilt(db: Database) -> None:
    """Every chunk copied into a new chunks table, as `haiku rebuild` switches to one."""
    rows = db.chunks.search().select(["document_id", "order", "text", "vector"]).limit(10_000).to_list()
    docs = {d.id: d for d in wait(reads.list_documents(db))}
    with exclusive(db):
        table = NewChunksTable(db, DIM)
        table.add(
            [
                (docs[r["document_id"]], NewChunk(order=r["order"], text=r["text"], vector=r["vector"]))
                for r in rows
            ]
        )
        table.switch("t:e")


def test_corpus_totals_kept_per_write_equal_a_full_count(db: Database, monkeypatch) -> None:
    # BM25 takes the corpus's chunk count and total length from what each write stores; each write
    # counts only the files it changed, so after any mix of writes the totals must equal a full count.
    _needs_lance()
    monkeypatch.setattr(indexes, "MAX_FRAGMENTS", 3)  # compactions (new files for old rows) happen too
    rng = np.random.default_rng(7)
    live = [w.document for w in _add(db, 4, 3, seed=0)]
    for step in range(1, 19):
        action = ["add", "add", "replace", "delete"][rng.integers(4)] if len(live) > 2 else "add"
        if action == "add":
            live += [
                w.document for w in _add(db, int(rng.integers(1, 3)), int(rng.integers(1, 5)), seed=step)
            ]
        elif action == "replace":
            new = _writes(1, int(rng.integers(1, 5)), seed=step)[0]
            write_documents(db, [new.model_copy(update={"replaces": live[int(rng.integers(len(live)))]})])
        else:
            delete_document(db, live.pop(int(rng.integers(len(live)))).id)
        if step == 9:
            vacuum(db)  # stores no totals: the next write counts its files afresh
        if step == 14:
            _rebuilt(db)
        stored = json.loads(db.meta[maintenance.CORPUS_TOTALS])
        if step != 9:  # the totals in use are the stored ones, counted file by file
            assert stored["version"] == db.chunks.version
            assert len(stored["fragments"]) == len(db.chunks.to_lance().get_fragments())
        kept = wait(maintenance.corpus_totals(db, db.chunks.version))
        assert kept == wait(facts.count_totals(db)), (step, action)
    assert wait(maintenance.corpus_totals(db, db.chunks.version))[0] == db.chunks.count_rows() > 0


def test_small_writes_add_b_tree_segments_without_rewriting_the_first(db: Database) -> None:
    # Merging a write's rows into a B-tree rewrites all of it (a cost growing with the table); a segment
    # of their own costs only them, and the segments stay few, as the other indexes' do.
    _needs_lance()
    first = _add(db, 100, 2, seed=0)
    written, counts = [], []
    for seed in range(1, 12):
        written += _add(db, 1, 2, seed=seed)
        for table, keys in ((db.chunks, indexes.CHUNK_KEYS), (db.documents, indexes.DOCUMENT_KEYS)):
            for key in keys:
                sizes = indexes.segment_rows(table, f"{key}_idx")
                assert sizes[0] == table.count_rows() - len(written) * (2 if table is db.chunks else 1)
                assert sum(sizes) == table.count_rows() and len(sizes) <= 1 + indexes.MAX_INDEX_DELTAS
        counts.append(len(indexes.segment_rows(db.chunks, "id_idx")))
    peak = counts.index(1 + indexes.MAX_INDEX_DELTAS)  # grew by one per write up to the bound...
    assert (
        counts[: peak + 1] == list(range(2, peak + 3)) and counts[peak + 1] < counts[peak]
    )  # ...then merged
    # Every document, old or new, is still found through the indexes, by id, uri, hash and chunks.
    for w in (first[7], *written):
        assert wait(reads.find_by_uri(db, w.document.uri)).id == w.document.id
        assert [c.text for c in wait(reads.chunks_of(db, w.document.id))] == [c.text for c in w.chunks]
    ids = [first[3].document.id, written[-1].document.id]
    assert set(wait(reads.get_documents(db, ids))) == set(ids)
    for table, where, index in (
        (db.documents, in_list("id", ids), "id_idx"),
        (db.documents, f"uri = {sql_string(written[5].document.uri)}", "uri_idx"),
        (db.chunks, f"document_id = {sql_string(written[5].document.id)}", "document_id_idx"),
    ):
        plan = table.search().where(where).explain_plan(True)
        assert f"@{index}(BTree)" in plan and "ScalarIndexQuery" in plan, plan
