"""The pool reuses open databases across the queries of a long-lived process (MCP, chat): a reused
reader handle follows later writes, even when a vacuum deleted the versions it first read."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from haiku_cli.databases import pool as pool_module
from haiku_cli.databases.concurrency import concurrently
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import Selection
from haiku_cli.errors import DatabaseError
from haiku_cli.store import Database, EmbedderSpec, Location, open_database, reads
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_writes import write_documents
from haiku_cli.store.maintenance import vacuum
from tests.store.test_document_writes import _write

pytestmark = pytest.mark.anyio


def _titles(db) -> list[str]:
    return sorted(d.title for d in wait(reads.list_documents(db, limit=None)))


async def test_a_reused_reader_sees_later_writes_after_a_vacuum(tmp_path: Path) -> None:
    loc = Location("t", str(tmp_path / "t.lancedb"))
    write_documents(
        open_database(loc, create_with=EmbedderSpec("test:e", 4), writable=True), [_write("first")]
    )
    pool = DatabasePool()
    (reader,) = await pool.clients_covering(Selection((loc,)))
    assert _titles(reader) == ["first"]
    other_process = open_database(loc, writable=True)
    write_documents(other_process, [_write("second")])
    vacuum(other_process)  # drops every version but the latest, including the one the reader opened
    reader.read_at -= 60  # the next query comes a minute later (queries within a second share a look)
    (again,) = await pool.clients_covering(Selection((loc,)))
    assert again is reader
    assert _titles(again) == ["first", "second"]
    assert wait(reads.count_chunks(again)) == 4


@pytest.mark.parametrize("search_type", ["fts", "vector", "hybrid"])
def test_a_search_right_after_another_handles_vacuum_reads_the_latest_version(
    make_db, workspace, search_type: str
) -> None:
    from haiku_cli.databases import operations

    texts = [f"Note {i} about owls and the night sky." for i in range(3)]
    loc, _ = make_db("notes", texts)
    reader, selection = workspace(), Selection((loc,))

    def search() -> list[str]:
        hits = anyio.run(lambda: operations.search_hits(reader, selection, "owls", search_type=search_type))
        return sorted(h.content for h in hits)

    assert search() == texts
    # Within the second in which a reader does not look for writes, another process vacuums: the files
    # of the version the reader holds are gone. The search reads the latest version instead of failing.
    anyio.run(lambda: operations.vacuum(workspace(), loc))
    assert search() == texts


def test_list_get_info_and_history_right_after_another_handles_vacuum_read_the_latest_version(
    make_db, workspace
) -> None:
    from haiku_cli.databases import operations

    loc, ids = make_db("notes", [f"Note {i} about owls." for i in range(3)])
    reader = workspace()

    def read_all() -> tuple:
        return anyio.run(
            lambda: concurrently(
                [
                    partial(operations.list_documents, reader, loc),
                    partial(operations.get_document, reader, loc, ids[0]),
                    partial(operations.info, reader, loc),
                    partial(operations.history, reader, loc),
                ]
            )
        )

    read_all()
    anyio.run(lambda: operations.vacuum(workspace(), loc))  # within the second the reader trusts its handle
    listed, got, info, _ = read_all()
    assert len(listed.documents) == 3 and got.document.id == ids[0] and len(got.chunks) == 1
    assert (info.documents, info.chunks) == (3, 3)


async def test_a_read_awaited_on_lancedbs_loop_is_bounded_as_a_whole_read() -> None:
    # A search awaits every database's reads in one coroutine; a networked store that stops answering
    # must still fail within the bound of a whole read, naming its database, as a blocking read does.
    pool = DatabasePool(timeout_seconds=0.2, read_seconds=1.0)
    remote = Location("papers", "s3://lab/papers.lancedb")
    with pytest.raises(DatabaseError, match=r"^database 'papers' did not finish a read within 1 s; "):
        await pool.within(remote, asyncio.sleep(60))
    assert await pool.within(remote, asyncio.sleep(0, "answered")) == "answered"
    # A read of several requests may take longer than one request's limit (a slow store answering).
    assert await pool.within(remote, asyncio.sleep(0.4, "slow")) == "slow"
    # By default that bound is generous: several requests' worth of the limit, and at least a minute.
    assert DatabasePool(timeout_seconds=2).read_seconds == 60
    assert DatabasePool(timeout_seconds=30).read_seconds == 8 * 30
    # A local database never stalls on a network: its reads are not bounded.
    local = Location("notes", "/tmp/notes.lancedb")
    assert await pool.within(local, asyncio.sleep(0.3, "slow but local")) == "slow but local"


def test_a_search_connects_to_each_database_once_and_never_lists_it(make_db, workspace, monkeypatch) -> None:
    from haiku_cli.databases import operations
    from haiku_cli.store import database

    notes, _ = make_db("notes", ["Owls hunt at night."])
    papers, _ = make_db("papers", ["Owls see in the dark."])
    connected: list[str] = []
    connect = database.connect

    def counting(location: Location):
        connected.append(location.name)
        conn = connect(location)
        monkeypatch.setattr(conn, "list_tables", lambda *a, **k: pytest.fail("listed the tables"))
        return conn

    monkeypatch.setattr(database, "connect", counting)
    ws, selection = workspace(), Selection((notes, papers))
    found = anyio.run(lambda: operations.search(ws, selection, "owls", search_type="fts"))
    assert len(found.hits) == 2
    assert sorted(connected) == ["notes", "papers"]


def test_a_search_looks_for_each_local_databases_meta_table_once(make_db, workspace, monkeypatch) -> None:
    from haiku_cli.databases import operations, selection
    from haiku_cli.store import database

    notes, _ = make_db("notes", ["Owls hunt at night."])
    looked: list[str] = []
    written_here = database.written_here

    def counting(location: Location) -> bool:
        looked.append(location.name)
        return written_here(location)

    # `searchable` skips unwritten local databases; opening the rest must not look at the folder again.
    monkeypatch.setattr(database, "written_here", counting)
    monkeypatch.setattr(selection, "written_here", counting)
    found = anyio.run(lambda: operations.search(workspace(), Selection((notes,)), "owls"))
    assert len(found.hits) == 1
    assert looked == ["notes"]


def _cold(tmp_path: Path, *names: str) -> list[Location]:
    locations = [Location(n, str(tmp_path / f"{n}.lancedb")) for n in names]
    for loc in locations:
        write_documents(
            open_database(loc, create_with=EmbedderSpec("test:e", 4), writable=True), [_write(loc.name)]
        )
    return locations


async def test_sibling_calls_on_a_cold_pool_open_each_database_once(tmp_path: Path, monkeypatch) -> None:
    locations = _cold(tmp_path, "a", "b")
    opens: Counter[str] = Counter()

    def counted(loc: Location, **kwargs: Any) -> Database:
        opens[loc.name] += 1
        return open_database(loc, **kwargs)

    monkeypatch.setattr(pool_module, "open_database", counted)
    pool = DatabasePool()
    # Three searches of one question (one response's tool calls) reach the cold pool together.
    siblings = await concurrently([partial(pool.clients_covering, Selection(tuple(locations)))] * 3)
    assert opens == {"a": 1, "b": 1}
    assert all(handles == siblings[0] for handles in siblings)


async def test_cold_databases_open_at_the_same_time(tmp_path: Path, monkeypatch) -> None:
    locations = _cold(tmp_path, "a", "b", "c")
    # Each open waits until all three have started: opened one after another, the first would wait alone
    # (and fail when the barrier gives up), so the test observes the overlap, not a duration.
    together = threading.Barrier(len(locations), timeout=60)

    def meeting(loc: Location, **kwargs: Any) -> Database:
        together.wait()
        return open_database(loc, **kwargs)

    monkeypatch.setattr(pool_module, "open_database", meeting)
    handles = await DatabasePool().clients_covering(Selection(tuple(locations)))
    assert [db.name for db in handles] == ["a", "b", "c"]
