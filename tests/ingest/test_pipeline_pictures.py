"""Pictures through the add pipeline into a real database: stored with their document, replaced, deleted,
kept by a rebuild, undone with a failed add, and added to databases made before pictures existed."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from haiku_cli.errors import ModelError
from haiku_cli.ingest import pipeline
from haiku_cli.ingest.rechunking import rebuild
from haiku_cli.store import open_database, reads, schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_writes import HeldWrites, delete_document
from haiku_cli.store.markers import picture_refs
from haiku_cli.store.picture_table import get_pictures, pictures_of
from tests.ingest.support import new_db, small_batches
from tests.support.pictures import pdf_with_images

PAGES = ["Intro to the method.\n\n\n\n\n\n\n\n\nFigure 1: The pipeline", "Results page."]


def paper(tmp_path: Path, color: str = "red") -> Path:
    path = tmp_path / "paper.pdf"
    path.write_bytes(pdf_with_images(PAGES, [(0, (72, 610, 120, 80), color), (1, (72, 500, 64, 64), "blue")]))
    return path


def add(db, embedder, *sources: Path):
    return anyio.run(
        lambda: pipeline.add_sources(db, embedder, [str(s) for s in sources], title=None, metadata={})
    )


@pytest.mark.parametrize("layout", ["current", "v1"])
def test_pictures_are_stored_with_their_document_and_chunks_cover_them(
    tmp_path: Path, embedder, layout: str
) -> None:
    db = new_db(tmp_path, embedder, layout)
    assert db.pictures is None  # made lazily: a database without pictures has no such table
    assert wait(pictures_of(db, ["any"])) == {"any": []}
    add(db, embedder, paper(tmp_path))
    (doc,) = wait(reads.list_documents(db))
    again = open_database(db.location)
    listed = wait(pictures_of(again, [doc.id]))[doc.id]
    assert [(p.reference, p.page, p.caption) for p in listed] == [
        ("p1-1", 1, "Figure 1: The pipeline"),
        ("p2-1", 2, ""),
    ]
    (stored,) = wait(get_pictures(again, doc.id, ["p1-1"]))
    assert stored.data.startswith(b"\x89PNG") and stored.size == len(stored.data)
    covered = {ref for c in wait(reads.chunks_of(again, doc.id)) for ref in picture_refs(c.text)}
    assert covered == {"p1-1", "p2-1"}


def test_references_are_stable_across_re_add_and_rebuild_and_a_changed_picture_updates(
    tmp_path: Path, embedder
) -> None:
    db = new_db(tmp_path, embedder)
    source = paper(tmp_path)
    add(db, embedder, source)
    (doc,) = wait(reads.list_documents(db))
    before = wait(get_pictures(db, doc.id))
    assert [o.status for o in add(db, embedder, source).outcomes] == ["unchanged"]
    anyio.run(lambda: rebuild(db, embedder))
    after = wait(get_pictures(open_database(db.location), doc.id))
    assert [(p.reference, p.data) for p in after] == [(p.reference, p.data) for p in before]
    # Same text, another picture: the document is updated, under the same id and references.
    paper(tmp_path, color="green")
    assert [o.status for o in add(db, embedder, source).outcomes] == ["updated"]
    changed = wait(get_pictures(open_database(db.location), doc.id))
    assert [p.reference for p in changed] == ["p1-1", "p2-1"]
    assert changed[0].data != before[0].data and changed[1].data == before[1].data


def test_deleting_a_document_deletes_its_pictures(tmp_path: Path, embedder) -> None:
    db = new_db(tmp_path, embedder)
    add(db, embedder, paper(tmp_path))
    (doc,) = wait(reads.list_documents(db))
    delete_document(db, doc.id)
    assert db.pictures is not None and db.pictures.count_rows() == 0


def test_a_failed_add_leaves_no_pictures_and_no_table(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = new_db(tmp_path, embedder)
    anyio.run(lambda: pipeline.add_text(db, embedder, "Already here.", title="Kept", metadata={}))
    (tmp_path / "later.md").write_text("# Later\n\nA document embedded after the paper was written.\n")
    small_batches(monkeypatch, 1)  # the paper's pages are written before the failure
    seen: list[bool] = []
    real_commit = HeldWrites._commit

    def commit(held: HeldWrites, group) -> None:
        if seen:
            raise ModelError("cannot reach embedding model test: Connection error.")  # a later batch fails
        real_commit(held, group)
        seen.append(db.pictures is not None and db.pictures.count_rows() > 0)
        # A reader opening now sees the state before the add: no pictures table yet.
        assert open_database(db.location).pictures is None

    monkeypatch.setattr(HeldWrites, "_commit", commit)
    with pytest.raises(ModelError):
        add(db, embedder, paper(tmp_path), tmp_path / "later.md")
    assert seen == [True]  # the pictures were written, and then undone
    again = open_database(db.location, writable=True)
    assert again.pictures is None
    assert schema.PICTURES not in again.conn.list_tables().tables
    assert [d.title for d in wait(reads.list_documents(again))] == ["Kept"]
    monkeypatch.setattr(HeldWrites, "_commit", real_commit)
    add(again, embedder, paper(tmp_path))
    assert again.pictures is not None and again.pictures.count_rows() == 2


def test_vacuum_drops_the_pictures_an_older_haiku_left_behind(tmp_path: Path, embedder) -> None:
    from haiku_cli.store.maintenance import vacuum
    from haiku_cli.store.writer_lock import exclusive

    db = new_db(tmp_path, embedder)
    add(db, embedder, paper(tmp_path))
    other = pdf_with_images(["Another page."], [(0, (72, 500, 64, 64), "green")])
    (tmp_path / "other.pdf").write_bytes(other)
    add(db, embedder, tmp_path / "other.pdf")
    gone, kept = wait(reads.list_documents(db))
    kept_pictures = wait(pictures_of(db, [kept.id]))[kept.id]
    assert len(kept_pictures) == 1
    with exclusive(db):  # what a haiku of before pictures does: documents and chunks only
        db.chunks.delete(f"document_id = '{gone.id}'")
        db.documents.delete(f"id = '{gone.id}'")
    vacuum(open_database(db.location, writable=True))
    again = open_database(db.location)
    assert wait(pictures_of(again, [gone.id, kept.id])) == {gone.id: [], kept.id: kept_pictures}
    assert again.pictures is not None and again.pictures.count_rows() == 1
