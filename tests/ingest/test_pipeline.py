"""The add pipeline against a real database: whole adds are all-or-nothing, re-adds are no-ops."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import numpy as np
import pytest

from haiku_cli.errors import DatabaseError, ModelError
from haiku_cli.ingest import pipeline
from haiku_cli.ingest.reports import NoProgress
from haiku_cli.store import indexes, open_database, reads
from haiku_cli.store.blocking import wait
from tests.ingest.support import (
    FailingAfter,
    Recording,
    chunks_by_id,
    docs_folder,
    new_db,
    sections,
    small_batches,
    vectors_by_id,
)


@pytest.mark.parametrize("layout", ["current", "v1"])
def test_a_failure_after_some_batches_undoes_the_whole_add(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    db = new_db(tmp_path, embedder, layout)
    columns = db.chunks.schema.names
    anyio.run(lambda: pipeline.add_text(db, embedder, "Already here.", title="Kept", metadata={}))
    small_batches(monkeypatch, 2)  # several batches, each its own commit
    folder = docs_folder(tmp_path, 7)
    with pytest.raises(ModelError):
        anyio.run(
            lambda: pipeline.add_sources(
                db, FailingAfter(embedder, 2), [str(folder)], title=None, metadata={}
            )
        )
    assert [d.title for d in wait(reads.list_documents(db))] == ["Kept"]
    assert wait(reads.count_chunks(db)) == 1
    again = open_database(db.location, writable=True)
    assert "pending_write" not in again.meta
    report = anyio.run(lambda: pipeline.add_sources(again, embedder, [str(folder)], title=None, metadata={}))
    assert [o.status for o in report.outcomes] == ["added"] * 7
    assert wait(reads.count_documents(again)) == 8
    assert again.chunks.schema.names == columns  # an add keeps a database's layout


class BadFirstBatch(NoProgress):
    """The real embedder, but its first batch comes back 3-d (the database cannot store it) once the next
    batch is queued, and the second never finishes until cancelled: batch 1's write fails while batch 2
    is being embedded. It is also the progress sink, to know what has been queued."""

    def __init__(self, real) -> None:
        self.calls = 0
        self.queued = 0
        self.name, self.dimension, self.max_tokens = real.name, real.dimension, real.max_tokens
        self.count_tokens = real.count_tokens

    def add_total(self, chunks: int) -> None:
        self.queued += chunks

    def advance(self, chunks: int) -> None:
        pass

    async def embed_documents(self, texts, on_progress=None):
        self.calls += 1
        if self.calls > 1:
            await anyio.sleep_forever()
        while self.queued < 2 * len(texts):
            await anyio.sleep(0.01)
        return np.ones((len(texts), 3), dtype=np.float32)


def test_a_failed_write_while_the_next_batch_embeds_undoes_the_whole_add(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = new_db(tmp_path, embedder)
    anyio.run(lambda: pipeline.add_text(db, embedder, "Already here.", title="Kept", metadata={}))
    small_batches(monkeypatch, 2)
    folder = docs_folder(tmp_path, 7)
    bad = BadFirstBatch(embedder)

    async def add() -> None:
        with anyio.fail_after(60):  # a stage that is not cancelled would hang here, not pass
            await pipeline.add_sources(db, bad, [str(folder)], title=None, metadata={}, progress=bad)

    with pytest.raises(DatabaseError, match="cannot be written"):
        anyio.run(add)
    assert bad.calls == 2  # batch 2 was embedding when batch 1's write failed
    assert [d.title for d in wait(reads.list_documents(db))] == ["Kept"]
    assert wait(reads.count_chunks(db)) == 1
    assert "pending_write" not in open_database(db.location, writable=True).meta


def test_a_pipelined_add_stores_every_batch_in_order_with_each_text_embedded_alone(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = new_db(tmp_path, embedder)
    small_batches(monkeypatch, 2)
    folder = docs_folder(tmp_path, 7)
    (folder / "d3.md").write_text("   \n")  # fails mid-way: no text
    report = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    # Reported in the order the files were found, though d3 failed before d2's batch was cut.
    order = ["d0", "d1", "d2", "d3", "d4", "d5", "d6"]
    assert [Path(o.source).stem for o in report.outcomes] == order
    assert [o.status for o in report.outcomes] == ["added"] * 3 + ["failed"] + ["added"] * 3
    rows = db.chunks.to_arrow().select(["search_text", "vector"]).to_pylist()
    assert len(rows) == 6
    alone = [anyio.run(embedder.embed_documents, [r["search_text"]])[0] for r in rows]
    assert all(
        np.array_equal(np.asarray(r["vector"], dtype=np.float32), v) for r, v in zip(rows, alone, strict=True)
    )


def test_readding_is_a_noop_and_a_change_replaces_in_place(tmp_path: Path, embedder) -> None:
    db = new_db(tmp_path, embedder)
    folder = docs_folder(tmp_path, 2)
    first = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    second = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    assert [o.status for o in second.outcomes] == ["unchanged", "unchanged"]
    (folder / "d0.md").write_text("# Doc 0\n\nRewritten entirely.\n")
    third = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    assert sorted(o.status for o in third.outcomes) == ["unchanged", "updated"]
    updated = next(o for o in third.outcomes if o.status == "updated")
    assert updated.document_id == next(o.document_id for o in first.outcomes if o.source.endswith("d0.md"))
    assert "Rewritten" in wait(reads.get_document(db, updated.document_id)).content
    assert wait(reads.count_documents(db)) == 2


class _Vanisher(NoProgress):
    """A progress sink that deletes a file once the first document is queued, as another program might."""

    def __init__(self, victim: Path) -> None:
        self.victim = victim

    def add_total(self, chunks: int) -> None:
        self.victim.unlink(missing_ok=True)

    def advance(self, chunks: int) -> None:
        pass


def test_a_file_that_vanishes_mid_add_is_reported_and_the_rest_added(tmp_path: Path, embedder) -> None:
    db = new_db(tmp_path, embedder)
    folder = docs_folder(tmp_path, 3)
    report = anyio.run(
        lambda: pipeline.add_sources(
            db, embedder, [str(folder)], title=None, metadata={}, progress=_Vanisher(folder / "d1.md")
        )
    )
    assert {Path(o.source).name: o.status for o in report.outcomes} == {
        "d0.md": "added",
        "d1.md": "failed",
        "d2.md": "added",
    }
    assert report.failed[0].error == f"{folder / 'd1.md'}: no such file"
    assert sorted(d.title for d in wait(reads.list_documents(db))) == ["Doc 0", "Doc 2"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable_files_and_folders_are_reported_and_the_rest_added(tmp_path: Path, embedder) -> None:
    db = new_db(tmp_path, embedder)
    folder = docs_folder(tmp_path, 2)
    (folder / "d0.md").chmod(0)
    (folder / "locked").mkdir()
    (folder / "locked").chmod(0)
    try:
        report = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    finally:
        (folder / "locked").chmod(0o755)
    errors = sorted(o.error or "" for o in report.failed)
    assert errors == [
        f"{folder / 'd0.md'}: cannot read (Permission denied)",
        f"{folder / 'locked'}: cannot read the directory (Permission denied)",
    ]
    assert [d.title for d in wait(reads.list_documents(db))] == ["Doc 1"]


def test_a_source_given_twice_in_one_add_is_stored_once(tmp_path: Path, embedder) -> None:
    db = new_db(tmp_path, embedder)
    folder = docs_folder(tmp_path, 2)
    report = anyio.run(
        lambda: pipeline.add_sources(
            db, embedder, [str(folder), str(folder / "d0.md")], title=None, metadata={}
        )
    )
    ids = {(Path(o.source).name, o.status): o.document_id for o in report.outcomes}
    assert sorted(ids) == [("d0.md", "added"), ("d0.md", "unchanged"), ("d1.md", "added")]
    assert ids["d0.md", "unchanged"] == ids["d0.md", "added"]
    assert wait(reads.count_documents(db)) == 2


def _long_text(n_paragraphs: int, word: str) -> str:
    # Each paragraph fills most of a chunk, so the document spans several batches of 2 chunks.
    return "\n\n".join(" ".join(f"{word}{p} catalog{i}" for i in range(80)) for p in range(n_paragraphs))


def test_a_long_document_is_written_in_parts_and_replaced_whole(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = new_db(tmp_path, embedder)
    small_batches(monkeypatch, 2)
    folder = docs_folder(tmp_path, 1)
    (folder / "long.md").write_text(_long_text(5, "alpha"))
    first = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    long = next(o for o in first.outcomes if o.source.endswith("long.md"))
    assert long.chunks >= 5
    assert [c.order for c in wait(reads.chunks_of(db, long.document_id))] == list(range(long.chunks))
    (folder / "long.md").write_text(_long_text(3, "beta"))
    second = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    updated = next(o for o in second.outcomes if o.source.endswith("long.md"))
    assert (updated.status, updated.document_id) == ("updated", long.document_id)
    chunks = wait(reads.chunks_of(db, long.document_id))
    assert [c.order for c in chunks] == list(range(updated.chunks))
    assert all("beta" in c.text and "alpha" not in c.text for c in chunks)
    assert wait(reads.count_chunks(db)) == updated.chunks + 1


def _chunk_copies(db) -> dict[str, set[tuple]]:
    """Per document id: the distinct (uri, title, metadata) its chunk rows carry."""
    columns = ["document_id", "document_uri", "document_title", "document_metadata"]
    copies: dict[str, set[tuple]] = {}
    for row in db.chunks.to_arrow().select(columns).to_pylist():
        copies.setdefault(row["document_id"], set()).add(tuple(row[c] for c in columns[1:]))
    return copies


def _document_fields(db) -> dict[str, set[tuple]]:
    rows = db.documents.to_arrow().select(["id", "uri", "title", "metadata"]).to_pylist()
    return {r["id"]: {(r["uri"], r["title"], r["metadata"])} for r in rows}


def test_every_chunk_carries_its_documents_fields_through_parts_and_updates(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = new_db(tmp_path, embedder)
    small_batches(monkeypatch, 2)  # the long document is written in parts
    folder = docs_folder(tmp_path, 2)
    (folder / "long.md").write_text(_long_text(5, "alpha"))
    add = pipeline.add_sources
    anyio.run(lambda: add(db, embedder, [str(folder)], title=None, metadata={"team": "ops"}))
    assert _chunk_copies(db) == _document_fields(db)
    assert {t for (_, t, _) in set().union(*_chunk_copies(db).values())} == {"Doc 0", "Doc 1", "long"}
    # New metadata alone, then a new title alone, re-chunk the unchanged files: the copies follow.
    again = anyio.run(lambda: add(db, embedder, [str(folder)], title=None, metadata={"team": "ëdge", "n": 2}))
    renamed = anyio.run(lambda: add(db, embedder, [str(folder / "long.md")], title="Renamed", metadata={}))
    assert [o.status for o in again.outcomes + renamed.outcomes] == ["updated"] * 4
    copies = _chunk_copies(db)
    assert copies == _document_fields(db)
    assert ("Renamed", '{"team": "ëdge", "n": 2}') in {(t, m) for (_, t, m) in set().union(*copies.values())}


def test_the_report_lists_sources_in_the_order_given(tmp_path: Path, embedder, monkeypatch) -> None:
    db = new_db(tmp_path, embedder)
    small_batches(monkeypatch, 2)
    folder = docs_folder(tmp_path, 4)
    given = [folder / "d3.md", tmp_path / "missing.md", folder, folder / "d1.md"]
    report = anyio.run(
        lambda: pipeline.add_sources(db, embedder, [str(p) for p in given], title=None, metadata={})
    )
    found = [Path(o.source).name for o in report.outcomes]
    assert found == ["d3.md", "missing.md", "d0.md", "d1.md", "d2.md", "d3.md", "d1.md"]
    assert [o.status for o in report.outcomes] == [
        "added",
        "failed",
        *["added"] * 3,
        "unchanged",
        "unchanged",
    ]


def _add_file(db, embedder, path: Path, **given):
    options = {"title": None, "metadata": {}} | given
    (outcome,) = anyio.run(lambda: pipeline.add_sources(db, embedder, [str(path)], **options)).outcomes
    return outcome


def _db_with_file(tmp_path: Path, embedder, text: str, **given):
    """A new database holding one Markdown file of `text`: the database, the file and its outcome."""
    db, path = new_db(tmp_path, embedder), tmp_path / "doc.md"
    path.write_text(text)
    return db, path, _add_file(db, embedder, path, **given)


def test_a_re_add_with_a_new_title_keeps_every_chunk_id_and_embeds_the_title(
    tmp_path: Path, embedder, monkeypatch
) -> None:
    db, path, first = _db_with_file(tmp_path, embedder, sections(2, 30, 2))
    before, vectors = chunks_by_id(db), vectors_by_id(db)
    small_batches(monkeypatch, 2)  # the document goes on over several batches
    outcome = _add_file(db, embedder, path, title="Renamed")
    assert (outcome.status, outcome.document_id) == ("updated", first.document_id)
    assert outcome.kept_chunk_ids == outcome.chunks == len(before) > 2
    assert chunks_by_id(db) == before
    # The title is part of what is embedded: every vector was made again.
    assert all(v != vectors[i] for i, v in vectors_by_id(db).items())
    assert {title for (_, title, _) in set().union(*_chunk_copies(db).values())} == {"Renamed"}


def test_a_re_add_with_one_paragraph_edited_gives_a_new_id_to_that_chunk_only(
    tmp_path: Path, embedder, monkeypatch
) -> None:
    db, path, _ = _db_with_file(tmp_path, embedder, sections(3, 3, 3, 3))
    before = {text: id_ for id_, (_, text, _) in chunks_by_id(db).items()}
    assert len(before) == 4
    path.write_text(
        sections(3, 3, 3, 3).replace("Sentence 1 of part 2 says", "Sentence 1 of part 2 now says")
    )
    recording = Recording(embedder)
    outcome = _add_file(db, recording, path)
    after = {text: id_ for id_, (_, text, _) in chunks_by_id(db).items()}
    (edited,) = after.keys() - before.keys()
    assert "part 2 now says" in edited and after[edited] not in before.values()
    assert {t: after[t] for t in after if t != edited} == {
        t: i for t, i in before.items() if "of part 2" not in t
    }
    assert outcome.kept_chunk_ids == 3
    assert recording.calls == [1]  # the unchanged chunks' vectors are reused (same title and embedder)


def test_a_metadata_only_re_add_keeps_ids_and_vectors_without_embedding(tmp_path: Path, embedder) -> None:
    db, path, _ = _db_with_file(tmp_path, embedder, sections(2, 30, 2), metadata={"team": "ops"})
    before, vectors = chunks_by_id(db), vectors_by_id(db)
    recording = Recording(embedder)
    outcome = _add_file(db, recording, path, metadata={"team": "dev"})
    assert outcome.status == "updated" and outcome.kept_chunk_ids == len(before)
    assert recording.calls == []
    assert chunks_by_id(db) == before and vectors_by_id(db) == vectors
    assert _chunk_copies(db) == _document_fields(db)  # the chunks carry the new metadata
    assert wait(reads.list_documents(db))[0].metadata == {"team": "dev"}


def test_a_failed_update_leaves_the_chunks_and_their_ids_as_they_were(
    tmp_path: Path, embedder, monkeypatch
) -> None:
    db, path, _ = _db_with_file(tmp_path, embedder, sections(3, 3, 3, 3))
    before = chunks_by_id(db)
    small_batches(monkeypatch, 1)
    with pytest.raises(ModelError):
        _add_file(db, FailingAfter(embedder, 2), path, title="Renamed")
    again = open_database(db.location)
    assert chunks_by_id(again) == before
    assert wait(reads.list_documents(again))[0].title != "Renamed"


def test_a_folder_re_added_with_new_metadata_over_many_batches_keeps_every_id_and_vector(
    tmp_path: Path, embedder, monkeypatch
) -> None:
    db = new_db(tmp_path, embedder)
    folder = docs_folder(tmp_path, 5)
    (folder / "long.md").write_text(sections(2, 30, 2))
    anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    before, vectors = chunks_by_id(db), vectors_by_id(db)
    # Batches of 2: the embedder stage reads the next batch's stored chunks while the writer writes.
    small_batches(monkeypatch, 2)
    recording = Recording(embedder)
    report = anyio.run(
        lambda: pipeline.add_sources(db, recording, [str(folder)], title=None, metadata={"n": "2"})
    )
    assert [(o.status, o.kept_chunk_ids) for o in report.outcomes] == [
        ("updated", o.chunks) for o in report.outcomes
    ]
    assert recording.calls == []
    assert chunks_by_id(db) == before and vectors_by_id(db) == vectors


class _Recorder(NoProgress):
    """A progress sink recording what an add told it, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def add_files(self, count: int) -> None:
        self.events.append(("files", count))

    def reading(self, source: str) -> None:
        self.events.append(("reading", Path(source).name))

    def file_done(self) -> None:
        self.events.append(("done", None))


def test_progress_knows_every_file_before_the_first_is_read(tmp_path: Path, embedder) -> None:
    db = new_db(tmp_path, embedder)
    folder = docs_folder(tmp_path, 3)
    (folder / "empty.md").write_text("")
    recorder = _Recorder()
    anyio.run(
        lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}, progress=recorder)
    )
    assert recorder.events == [
        ("files", 4),
        *[e for name in ["d0.md", "d1.md", "d2.md", "empty.md"] for e in [("reading", name), ("done", None)]],
    ]


class _Steps(NoProgress):
    """A progress sink recording the upkeep steps an add named."""

    def __init__(self) -> None:
        self.steps: list[str] = []

    def upkeep(self, step: str) -> None:
        self.steps.append(step)


def test_an_add_that_builds_the_vector_index_first_says_so(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first build of a large table's vector index takes minutes after the add: it is named, once.
    monkeypatch.setattr(indexes, "VECTOR_INDEX_MIN_ROWS", 3)
    db = new_db(tmp_path, embedder)

    def add(count: int) -> list[str]:
        steps = _Steps()
        (place := tmp_path / f"add{len(list(tmp_path.glob('add*')))}").mkdir()
        folder = docs_folder(place, count)
        anyio.run(
            lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}, progress=steps)
        )
        return steps.steps

    assert add(2) == []  # below the threshold: no index to build
    rows = wait(reads.count_chunks(db)) + 2  # the next add crosses it
    assert add(2) == [f"building the vector index over {rows:,} chunks (once)"]
    assert indexes.has_vector_index(db)
    assert add(1) == []  # built: a small add's rows are indexed quickly, unnamed
    rows = wait(reads.count_chunks(db))
    steps = add(3)  # as many new rows as the threshold: named, as the index grows by them
    assert steps == [f"indexing the vectors of {wait(reads.count_chunks(db)) - rows:,} new chunks"]


class _CtrlC:
    """The real embedder, with Ctrl-C pressed (the add's task cancelled) as it starts its `at`-th batch."""

    def __init__(self, real, at: int, scope: anyio.CancelScope | None = None) -> None:
        self._real, self._at, self.scope = real, at, scope
        self.calls, self.embedded = 0, 0
        self.name, self.dimension, self.max_tokens = real.name, real.dimension, real.max_tokens
        self.count_tokens = real.count_tokens

    async def embed_documents(self, texts, on_progress=None):
        self.calls += 1
        if self.calls == self._at and self.scope is not None:
            self.scope.cancel()
            await anyio.sleep(1)  # cancelled here
        self.embedded += len(texts)
        return await self._real.embed_documents(texts, on_progress=on_progress)


def _add_interrupted(db, pressing: _CtrlC, folder: Path) -> None:
    """Add `folder` with `pressing` as the embedder: Ctrl-C comes at the embedding call it was made for."""

    async def interrupted() -> None:
        with anyio.CancelScope() as scope:
            pressing.scope = scope
            await pipeline.add_sources(db, pressing, [str(folder)], title=None, metadata={})
        assert scope.cancelled_caught

    anyio.run(interrupted)


def test_ctrl_c_keeps_the_documents_finished_and_a_rerun_continues(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = new_db(tmp_path, embedder)
    small_batches(monkeypatch, 2)
    folder = docs_folder(tmp_path, 7)
    (folder / "d3x.md").write_text(_long_text(5, "alpha"))  # after d3.md: it spans three batches
    pressing = _CtrlC(embedder, at=4)
    _add_interrupted(db, pressing, folder)
    # Batches [d0 d1] [d2 d3] were written whole; [d3x d3x] was written too, but d3x is not whole.
    kept = {Path(d.uri).name: d.id for d in wait(reads.list_documents(db, limit=None))}
    assert sorted(kept) == ["d0.md", "d1.md", "d2.md", "d3.md"]
    assert all(len(wait(reads.chunks_of(db, i))) == 1 for i in kept.values())
    again = open_database(db.location, writable=True)
    assert "pending_write" not in again.meta
    rerun = _CtrlC(embedder, at=0)
    report = anyio.run(lambda: pipeline.add_sources(again, rerun, [str(folder)], title=None, metadata={}))
    statuses = {Path(o.source).name: o.status for o in report.outcomes}
    assert statuses == {
        **dict.fromkeys(["d0.md", "d1.md", "d2.md", "d3.md"], "unchanged"),
        **dict.fromkeys(["d3x.md", "d4.md", "d5.md", "d6.md"], "added"),
    }
    long = next(o for o in report.outcomes if o.source.endswith("d3x.md"))
    assert rerun.embedded == long.chunks + 3  # only what the interrupted add had not kept
    assert wait(reads.count_documents(again)) == 8


def test_an_add_commits_its_batches_in_groups_and_ctrl_c_keeps_only_whole_groups(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = new_db(tmp_path, embedder)
    small_batches(monkeypatch, 2, commit_every=6)  # batches [d0 d1] [d2 d3] [d4 d5] [d6], commits of 6
    folder = docs_folder(tmp_path, 7)
    anyio.run(lambda: pipeline.add_sources(db, embedder, [str(folder)], title=None, metadata={}))
    # Two commits of new rows (6 and 1 chunks), not four: the table holds two data files.
    assert sorted(f.count_rows() for f in indexes.lance_dataset(db.chunks).get_fragments()) == [1, 6]
    other = new_db(tmp_path / "other", embedder)
    pressing = _CtrlC(embedder, at=3)  # while [d4 d5] embeds: [d0 d1] [d2 d3] are written, not committed
    _add_interrupted(other, pressing, folder)
    assert wait(reads.count_documents(other)) == 0  # what a commit had not taken yet is not kept
    assert "pending_write" not in open_database(other.location, writable=True).meta
