"""All-or-nothing writes: failures and kills leave the database as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from haiku_cli.store import (
    DocumentRecord,
    DocumentWrite,
    EmbedderSpec,
    Location,
    NewChunk,
    open_database,
    reads,
)
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_writes import delete_document, new_id, write_documents
from haiku_cli.store.transaction import atomic_write

SPEC = EmbedderSpec("test:e", 4)


def _write(text: str, uri: str | None = None, n_chunks: int = 2) -> DocumentWrite:
    now = datetime.now(UTC)
    doc = DocumentRecord(
        id=new_id(), uri=uri, title=text[:10], content=text, content_hash=text, created_at=now, updated_at=now
    )
    chunks = [
        NewChunk(order=i, text=f"{text} part {i}", vector=[1.0, 0.0, 0.0, float(i)]) for i in range(n_chunks)
    ]
    return DocumentWrite(document=doc, chunks=chunks)


@pytest.fixture
def db(tmp_path: Path):
    return open_database(Location("t", str(tmp_path / "t.lancedb")), create_with=SPEC, writable=True)


def test_write_and_read_back(db) -> None:
    w = _write("alpha beta", uri="file:///a")
    write_documents(db, [w])
    doc = wait(reads.get_document(db, w.document.id))
    assert doc is not None and doc.content == "alpha beta"
    assert [c.order for c in wait(reads.chunks_of(db, w.document.id))] == [0, 1]
    assert wait(reads.find_by_uri(db, "file:///a")).id == w.document.id


def test_replace_keeps_id_and_creation_time(db) -> None:
    first = _write("old text", uri="file:///a")
    write_documents(db, [first])
    old = wait(reads.get_document(db, first.document.id))
    second = _write("new text", uri="file:///a", n_chunks=3)
    second.replaces = old
    write_documents(db, [second])
    assert wait(reads.count_documents(db)) == 1
    doc = wait(reads.get_document(db, first.document.id))
    assert doc.content == "new text" and doc.created_at == old.created_at
    assert [c.text for c in wait(reads.chunks_of(db, doc.id))] == [
        "new text part 0",
        "new text part 1",
        "new text part 2",
    ]


def test_failure_inside_a_write_rolls_back_both_tables(db) -> None:
    write_documents(db, [_write("kept")])
    before = (wait(reads.count_documents(db)), wait(reads.count_chunks(db)))
    with pytest.raises(RuntimeError), atomic_write(db):
        db.documents.add(
            [
                {
                    "id": "x",
                    "uri": None,
                    "title": None,
                    "metadata": "{}",
                    "content": "",
                    "content_hash": "",
                    "created_at": datetime.now(UTC),
                    "updated_at": datetime.now(UTC),
                }
            ]
        )
        raise RuntimeError("embedding failed half-way")
    assert (wait(reads.count_documents(db)), wait(reads.count_chunks(db))) == before
    assert "pending_write" not in db.meta


def test_delete_removes_document_and_chunks(db) -> None:
    a, b = _write("a text"), _write("b text")
    write_documents(db, [a, b])
    delete_document(db, a.document.id)
    assert wait(reads.get_document(db, a.document.id)) is None
    assert wait(reads.count_chunks(db)) == 2


def test_kill_between_tables_leaves_no_partial_document(tmp_path: Path) -> None:
    """Killed after writing documents but before chunks: readers and the next writer see the old state."""
    path = tmp_path / "k.lancedb"
    loc = Location("k", str(path))
    db = open_database(loc, create_with=SPEC, writable=True)
    write_documents(db, [_write("survivor")])
    script = textwrap.dedent(
        f"""
        import os, signal
        from datetime import UTC, datetime
        from haiku_cli.store import Location, open_database
        from haiku_cli.store.transaction import atomic_write
        db = open_database(Location("k", {str(path)!r}), writable=True)
        with atomic_write(db):
            now = datetime.now(UTC)
            db.documents.add([{{"id": "half", "uri": None, "title": None, "metadata": "{{}}", "content": "x",
                               "content_hash": "x", "created_at": now, "updated_at": now}}])
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ}, capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    reader = open_database(loc)
    assert wait(reads.get_document(reader, "half")) is None
    assert wait(reads.count_documents(reader)) == 1
    # The next writer takes the lock (the dead writer's was dropped with it) and undoes the write first.
    writer = open_database(loc, writable=True)
    write_documents(writer, [_write("after")])
    assert "pending_write" not in writer.meta
    assert wait(reads.count_documents(writer)) == 2 and wait(reads.get_document(writer, "half")) is None


def test_a_group_held_past_its_time_commits_its_whole_documents_as_a_keep_point(db) -> None:
    from haiku_cli.store.document_writes import HeldWrites
    from haiku_cli.store.writer_lock import exclusive

    with exclusive(db), atomic_write(db):
        # Far from the group's size, but past its time: the whole document is committed and kept.
        held = HeldWrites(db, commit_rows=1_000_000, commit_seconds=0.0)
        held.write([_write("whole one")])
        assert not held.held and db.kept_counts == (1, 2)
        # A document that goes on in the next write is held whatever the time: it is not whole yet.
        held.write([_write("cut one", n_chunks=3)], boundary=False)
        assert held.held and db.kept_counts == (1, 2)
        held.commit()
        assert not held.held and db.kept_counts == (2, 5)


def test_a_killed_write_that_made_the_pictures_table_is_undone_table_and_all(tmp_path: Path) -> None:
    """Killed after its pictures were written: the next writer undoes the write, and the pictures table
    that write created goes with its rows (a database that never held a picture has no such table)."""
    path = tmp_path / "p.lancedb"
    loc = Location("p", str(path))
    db = open_database(loc, create_with=SPEC, writable=True)
    write_documents(db, [_write("survivor")])
    assert db.pictures is None
    script = textwrap.dedent(
        f"""
        import os, signal
        from haiku_cli.store import Location, open_database
        from haiku_cli.store.records import PictureRecord
        from haiku_cli.store.transaction import atomic_write
        from haiku_cli.store.writer_lock import exclusive
        from haiku_cli.store.document_writes import HeldWrites
        from tests.store.test_document_writes import _write
        from tests.support.pictures import png

        db = open_database(Location("p", {str(path)!r}), writable=True)
        data = png()
        picture = PictureRecord(
            document_id="", reference="p1-1", width=64, height=48, format="png", size=len(data), data=data
        )
        write = _write("figure").model_copy(update={{"pictures": [picture]}})
        with exclusive(db), atomic_write(db):
            HeldWrites(db, commit_rows=0).write([write])
            assert db.pictures is not None and db.pictures.count_rows() == 1
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert (path / "pictures.lance").exists()  # left by the killed writer
    assert open_database(loc).pictures is None  # a reader meanwhile sees the state before the write
    writer = open_database(loc, writable=True)
    write_documents(writer, [_write("after")])  # the next writer undoes the dead one's write first
    assert "pending_write" not in writer.meta
    assert sorted(d.title for d in wait(reads.list_documents(writer))) == ["after", "survivor"]
    assert "pictures" not in writer.conn.list_tables().tables and writer.pictures is None
    assert open_database(loc).pictures is None
