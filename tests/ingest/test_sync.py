"""Remembered sources and `sync` against a real database and the real file system."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from haiku_cli.errors import ModelError
from haiku_cli.ingest import pipeline
from haiku_cli.ingest.sync import sync_source
from haiku_cli.store import open_database, reads
from haiku_cli.store import source_tables as stored
from haiku_cli.store.blocking import wait
from tests.ingest.support import FailingAfter, new_db
from tests.support.etag_server import Page, serve_page


def _add(db, embedder, *sources: str, **options):
    options.setdefault("title", None)
    options.setdefault("metadata", {})
    return anyio.run(lambda: pipeline.add_sources(db, embedder, list(sources), **options))


def _sync(db, embedder, source: str, scope=None):
    (remembered,) = [s for s in stored.read_sources(db) if s.source == source]

    async def go():
        async def get_embedder():
            return embedder

        return await sync_source(db, get_embedder, remembered, scope=scope)

    return anyio.run(go)


def _by_uri(db) -> dict[str, str]:
    return {d.uri: d.id for d in wait(reads.list_documents(db, limit=None))}


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# Alpha\n\nApples grow on trees.\n")
    (folder / "sub" / "b.txt").write_text("Bananas are yellow.\n")
    return folder


def test_add_src_remembers_each_source_with_its_options(tmp_path: Path, embedder, notes: Path) -> None:
    db = new_db(tmp_path, embedder)
    single = tmp_path / "single.md"
    single.write_text("One file on its own.\n")
    _add(db, embedder, str(notes), metadata={"project": "x"}, follow_symlinks=True)
    _add(db, embedder, str(single), title="Single")
    remembered = {s.source: s for s in stored.read_sources(db)}
    assert remembered[str(notes)].kind == "folder"
    assert remembered[str(notes)].metadata == {"project": "x"}
    assert remembered[str(notes)].follow_symlinks is True
    assert (remembered[str(single)].kind, remembered[str(single)].title) == ("file", "Single")
    states = stored.file_states(db, str(notes))
    assert sorted(Path(s.uri.removeprefix("file://")).name for s in states) == ["a.md", "b.txt"]
    assert {s.document_id for s in states} <= set(_by_uri(db).values())


def test_a_folder_added_again_without_include_keeps_its_remembered_rules(
    tmp_path: Path, embedder, notes: Path
) -> None:
    from haiku_cli.ingest.source_walk import FileChoice

    db = new_db(tmp_path, embedder)
    (notes / "app.log2").write_text("ERROR the disk filled up at noon.\n")
    _add(db, embedder, str(notes), choice=FileChoice(include=["*.md", "*.log2"]))
    log = (notes / "app.log2").as_uri()
    assert set(_by_uri(db)) == {(notes / "a.md").as_uri(), log}
    again = _add(db, embedder, str(notes))  # no --include: the remembered rules read the folder
    assert [(Path(o.source).name, o.why) for o in again.left_out] == [("b.txt", "excluded")]
    assert {(Path(o.source).name, o.status) for o in again.outcomes} == {
        ("a.md", "unchanged"),
        ("app.log2", "unchanged"),
    }
    (remembered,) = stored.read_sources(db)
    assert (remembered.include, remembered.exclude) == (["*.md", "*.log2"], [])
    assert _sync(db, embedder, str(notes)).deleted == 0  # the file --include brought in stays
    assert log in _by_uri(db)
    # Rules given again replace the remembered ones, and a sync follows them.
    _add(db, embedder, str(notes), choice=FileChoice(exclude=["*.log2"]))
    assert _sync(db, embedder, str(notes)).deleted == 1
    assert set(_by_uri(db)) == {(notes / "a.md").as_uri(), (notes / "sub" / "b.txt").as_uri()}


def test_a_folder_added_again_without_a_symlink_flag_keeps_following_them(
    tmp_path: Path, embedder, notes: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "far.md").write_text("Figs ripen late in summer.\n")
    (notes / "link").symlink_to(outside, target_is_directory=True)
    far = (notes / "link" / "far.md").as_uri()
    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes), follow_symlinks=True)
    assert far in _by_uri(db)
    _add(db, embedder, str(notes))  # no flag: followed as remembered, so the file stays
    (remembered,) = stored.read_sources(db)
    assert remembered.follow_symlinks is True
    assert _sync(db, embedder, str(notes)).deleted == 0
    assert far in _by_uri(db)
    _add(db, embedder, str(notes), follow_symlinks=False)  # --no-follow-symlinks turns it off
    assert stored.read_sources(db)[0].follow_symlinks is False
    assert _sync(db, embedder, str(notes)).deleted == 1
    assert far not in _by_uri(db)


def test_sync_adds_replaces_and_deletes_only_what_left_its_source(
    tmp_path: Path, embedder, notes: Path
) -> None:
    db = new_db(tmp_path, embedder)
    other = tmp_path / "other"
    other.mkdir()
    (other / "c.md").write_text("Cherries are red.\n")
    _add(db, embedder, str(notes))
    _add(db, embedder, str(other))
    anyio.run(lambda: pipeline.add_text(db, embedder, "A note typed in.", title="Typed", metadata={}))
    before = _by_uri(db)
    (notes / "sub" / "b.txt").write_text("Bananas are yellow and curved.\n")
    (notes / "a.md").unlink()
    (notes / "new.md").write_text("New notes about grapes.\n")
    (other / "c.md").unlink()  # gone from the other source, which is not synced here

    done = _sync(db, embedder, str(notes))

    assert (done.added, done.updated, done.deleted, done.unchanged) == (1, 1, 1, 0)
    after = _by_uri(db)
    b_uri = (notes / "sub" / "b.txt").as_uri()
    assert after[b_uri] == before[b_uri]  # replaced in place: the id stays
    assert (notes / "a.md").as_uri() not in after
    assert (notes / "new.md").as_uri() in after
    assert (other / "c.md").as_uri() in after  # only the synced source's documents go
    assert None in after  # the typed note
    assert wait(reads.count_chunks(db)) == 4


def test_an_unchanged_file_costs_a_stat_not_a_read(tmp_path: Path, embedder, notes: Path) -> None:
    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes))
    a = notes / "a.md"
    stat = a.stat()
    # Same size, same modification time, other bytes: only a read could tell.
    a.write_text("# Alpha\n\nGrapes grow on trees.\n")
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    done = _sync(db, embedder, str(notes))
    assert (done.unchanged, done.updated) == (2, 0)
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # the time moved: now it is read
    assert _sync(db, embedder, str(notes)).updated == 1


def test_an_unchanged_file_without_a_suffix_is_not_opened_to_sniff_it_either(
    tmp_path: Path, embedder, notes: Path
) -> None:
    db = new_db(tmp_path, embedder)
    readme = notes / "README"
    readme.write_text("Read me: the notes are about fruit.\n")
    _add(db, embedder, str(notes))
    stat = readme.stat()
    # Binary bytes now, same size and time: a sniff would leave it out (and its document would go).
    readme.write_bytes(b"\x00\x01" * (stat.st_size // 2) + b"\x00" * (stat.st_size % 2))
    os.utime(readme, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    done = _sync(db, embedder, str(notes))
    assert (done.unchanged, done.deleted) == (3, 0)


def test_a_touched_file_is_read_once_then_known_by_its_stat_again(
    tmp_path: Path, embedder, notes: Path
) -> None:
    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes))
    a = notes / "a.md"
    os.utime(a, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns + 10**9))
    done = _sync(db, embedder, str(notes))
    assert (done.unchanged, done.updated, done.changes) == (2, 0, [])
    stat = a.stat()
    a.write_text("# Alpha\n\nGrapes grow on trees.\n")
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _sync(db, embedder, str(notes)).updated == 0  # the refreshed stat was stored


def test_a_vanished_source_folder_keeps_its_documents(tmp_path: Path, embedder, notes: Path) -> None:
    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes))
    moved = tmp_path / "moved"
    notes.rename(moved)
    done = _sync(db, embedder, str(notes))
    assert done.status == "missing"
    assert "no such file or directory" in (done.error or "")
    assert wait(reads.count_documents(db)) == 2
    moved.rename(notes)
    back = _sync(db, embedder, str(notes))
    assert (back.status, back.unchanged, back.deleted) == ("synced", 2, 0)


def test_a_source_folder_that_became_a_file_follows_the_add_rules(
    tmp_path: Path, embedder, notes: Path
) -> None:
    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes))
    for path in sorted(notes.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    notes.rmdir()
    notes.write_text("Now a single file of notes.\n")
    done = _sync(db, embedder, str(notes))
    assert (done.added, done.deleted) == (1, 2)
    assert list(_by_uri(db)) == [notes.as_uri()]


def test_a_document_another_source_also_gave_stays(tmp_path: Path, embedder, notes: Path) -> None:
    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes))
    _add(db, embedder, str(notes / "a.md"))  # remembered on its own too
    (notes / ".haikuignore").write_text("a.md\n")  # the folder no longer holds it
    done = _sync(db, embedder, str(notes))
    assert done.deleted == 1  # the folder lets go of it ...
    assert (notes / "a.md").as_uri() in _by_uri(db)  # ... the file source keeps it
    assert [s.source for s in stored.file_states(db) if s.uri == (notes / "a.md").as_uri()] == [
        str(notes / "a.md")
    ]


def test_a_deleted_document_is_read_again_from_its_file(tmp_path: Path, embedder, notes: Path) -> None:
    from haiku_cli.store.document_writes import delete_document

    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes))
    delete_document(db, _by_uri(db)[(notes / "a.md").as_uri()])
    assert _sync(db, embedder, str(notes)).added == 1
    assert (notes / "a.md").as_uri() in _by_uri(db)


def test_a_failing_sync_leaves_documents_and_file_states_as_they_were(
    tmp_path: Path, embedder, notes: Path
) -> None:
    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes))
    states = sorted(stored.file_states(db))
    documents = _by_uri(db)
    (notes / "a.md").unlink()
    (notes / "new.md").write_text("New notes about grapes.\n")
    (remembered,) = stored.read_sources(db)

    async def failing():
        return FailingAfter(embedder, 0)

    with pytest.raises(ModelError):
        anyio.run(lambda: sync_source(db, failing, remembered))
    again = open_database(db.location, writable=True)
    assert _by_uri(again) == documents
    assert sorted(stored.file_states(again)) == states


def test_a_scoped_sync_looks_only_at_the_paths_given(tmp_path: Path, embedder, notes: Path) -> None:
    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes))
    (notes / "a.md").unlink()
    (notes / "sub" / "b.txt").write_text("Bananas, changed.\n")
    (notes / "sub" / "c.md").write_text("Cherries.\n")
    (notes / ".hidden.md").write_text("An editor's temporary file.\n")
    done = _sync(db, embedder, str(notes), scope=[notes / "sub", notes / ".hidden.md"])
    assert (done.added, done.updated, done.deleted) == (1, 1, 0)  # a.md is outside the scope
    assert _sync(db, embedder, str(notes), scope=[notes / "a.md"]).deleted == 1


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch) -> Iterator[Page]:
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    with serve_page(b"<title>Page</title><p>First version.</p>") as served:
        yield served


def test_a_url_is_asked_again_with_its_etag(tmp_path: Path, embedder, page: Page) -> None:
    db = new_db(tmp_path, embedder)
    _add(db, embedder, page.url)
    first = _by_uri(db)[page.url]
    versions = (db.meta_table.version, db.documents.version)
    done = _sync(db, embedder, page.url)
    assert (done.unchanged, done.updated) == (1, 0)
    assert page.statuses == [200, 304]
    db.meta_table.checkout_latest()
    db.documents.checkout_latest()
    assert (db.meta_table.version, db.documents.version) == versions  # "not modified": nothing written
    page.body = b"<title>Page</title><p>Second version.</p>"
    done = _sync(db, embedder, page.url)
    assert done.updated == 1
    assert _by_uri(db)[page.url] == first
    assert "Second version" in wait(reads.get_document(db, first)).content
    assert _sync(db, embedder, page.url).unchanged == 1
    assert page.statuses[-1] == 304


@pytest.mark.parametrize("follow", [False, True])
def test_a_file_that_became_a_symlink_out_of_the_tree_follows_the_add_rules(
    tmp_path: Path, embedder, notes: Path, follow: bool
) -> None:
    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes), follow_symlinks=follow)
    outside = tmp_path / "outside.md"
    outside.write_text("# Alpha\n\nApples grow on trees, says a file elsewhere.\n")
    (notes / "a.md").unlink()
    (notes / "a.md").symlink_to(outside)
    done = _sync(db, embedder, str(notes))
    if follow:  # the remembered --follow-symlinks: read where it leads
        assert (done.updated, done.skipped, done.deleted) == (1, 0, 0)
    else:  # skipped and reported, as add-src does; its document no longer comes from the folder
        assert (done.updated, done.skipped, done.deleted) == (0, 1, 1)
        assert "outside the folder being added" in (done.changes[0].note or "")
        assert (notes / "a.md").as_uri() not in _by_uri(db)


def test_a_renamed_or_moved_file_keeps_its_document_and_chunk_ids(
    tmp_path: Path, embedder, notes: Path
) -> None:
    db = new_db(tmp_path, embedder)
    _add(db, embedder, str(notes))
    before = _by_uri(db)[(notes / "a.md").as_uri()]
    chunk_ids = {c.id for c in wait(reads.chunks_of(db, before))}
    (notes / "a.md").rename(notes / "sub" / "moved.md")
    done = _sync(db, embedder, str(notes))
    assert (done.updated, done.added, done.deleted) == (1, 0, 0)
    (change,) = done.changes
    assert change.note == f"moved from {notes / 'a.md'}"
    assert _by_uri(db)[(notes / "sub" / "moved.md").as_uri()] == before
    assert {c.id for c in wait(reads.chunks_of(db, before))} == chunk_ids
    assert wait(reads.count_documents(db)) == 2
    assert _sync(db, embedder, str(notes)).unchanged == 2  # its new name's stat was stored
