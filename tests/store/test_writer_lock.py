"""Two writer processes on one database, interleaved deterministically: writers exclude each other,
a live writer is never rolled back, a dead writer's unfinished write is."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from haiku_cli.errors import DatabaseError
from haiku_cli.store import EmbedderSpec, Location, open_database, reads, writer_lock
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_writes import write_documents
from haiku_cli.store.transaction import atomic_write
from haiku_cli.store.writer_lock import LEASE_KEY, LEASE_TTL_SECONDS, Owner, WaitPolicy, exclusive
from tests.store.test_document_writes import _write
from tests.support.timing import slowness

SPEC = EmbedderSpec("test:e", 4)

# A writer process: adds the documents named on its command line as one write, in one batch each.
_WRITER = textwrap.dedent(
    """
    import json, os, sys
    from haiku_cli.store import Location, open_database
    from haiku_cli.store.transaction import atomic_write
    from haiku_cli.store.writer_lock import WaitPolicy
    from haiku_cli.store.document_writes import write_documents
    from tests.store.test_document_writes import _write

    path, fail, *texts = sys.argv[1:]
    options = json.loads(os.environ.get("TEST_STORAGE_OPTIONS", "{}"))
    db = open_database(Location("t", path, storage_options=options), writable=True)
    db.write_policy = WaitPolicy(60, notify=lambda m: print(m, file=sys.stderr, flush=True))
    with atomic_write(db):
        for text in texts:
            write_documents(db, [_write(text)])
        if fail == "fail":
            raise SystemExit("failing on purpose after writing")
    """
)

_VACUUM = textwrap.dedent(
    """
    import sys
    from haiku_cli.store import Location, open_database
    from haiku_cli.store.maintenance import vacuum
    from haiku_cli.store.writer_lock import WaitPolicy

    db = open_database(Location("t", sys.argv[1]), writable=True)
    db.write_policy = WaitPolicy(60, notify=lambda m: print(m, file=sys.stderr, flush=True))
    vacuum(db)
    """
)


def _spawn(
    script: str, args: list[str], pause: str | None, stderr: Path, options: dict[str, str] | None = None
) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    env["TEST_STORAGE_OPTIONS"] = json.dumps(options or {})
    env.pop("HAIKU_TEST_PAUSE", None)
    if pause:
        env["HAIKU_TEST_PAUSE"] = pause
    with stderr.open("w") as err:
        return subprocess.Popen([sys.executable, "-c", script, *args], env=env, stderr=err)


def _wait_for(check, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    path = tmp_path / "t.lancedb"
    db = open_database(Location("t", str(path)), create_with=SPEC, writable=True)
    write_documents(db, [_write("first")])
    return path


def _paused_writer(
    tmp_path: Path,
    db_path: Path | str,
    *texts: str,
    fail: bool = False,
    options: dict[str, str] | None = None,
) -> subprocess.Popen:
    """A writer stopped after it committed its first batch (its journal and data are on disk)."""
    gate = tmp_path / "gate"
    gate.mkdir(exist_ok=True)
    args = [str(db_path), "fail" if fail else "ok", *texts]
    proc = _spawn(_WRITER, args, f"data-written:{gate}", tmp_path / "a.err", options)
    _wait_for(lambda: any(gate.glob("data-written.*.reached")), "the first writer to pause")
    return proc


def _release(tmp_path: Path) -> None:
    (tmp_path / "gate" / "data-written.go").touch()


def _texts(path: Path) -> list[str]:
    db = open_database(Location("t", str(path)))
    return sorted(d.title for d in wait(reads.list_documents(db, limit=None)))


def _chunk_counts(path: Path) -> set[int]:
    db = open_database(Location("t", str(path)))
    return {len(wait(reads.chunks_of(db, d.id))) for d in wait(reads.list_documents(db, limit=None))}


def test_second_writer_waits_and_neither_write_is_lost(tmp_path: Path, db_path: Path) -> None:
    a = _paused_writer(tmp_path, db_path, "from a")
    b = _spawn(_WRITER, [str(db_path), "ok", "from b"], None, tmp_path / "b.err")
    _wait_for(lambda: "being written by pid" in (tmp_path / "b.err").read_text(), "the second writer's note")
    assert f"pid {a.pid}" in (tmp_path / "b.err").read_text()
    # While A holds the lock, B neither wrote nor undid A's unfinished write; readers see the old state.
    assert b.poll() is None
    assert "pending_write" in open_database(Location("t", str(db_path))).meta
    assert _texts(db_path) == ["first"]
    _release(tmp_path)
    assert a.wait(60) == 0 and b.wait(60) == 0, (tmp_path / "b.err").read_text()
    assert _texts(db_path) == ["first", "from a", "from b"]
    assert _chunk_counts(db_path) == {2}


def test_second_writer_that_will_not_wait_fails_naming_the_first(tmp_path: Path, db_path: Path) -> None:
    a = _paused_writer(tmp_path, db_path, "from a")
    db = open_database(Location("t", str(db_path)), writable=True)
    db.write_policy = WaitPolicy(0)
    with pytest.raises(DatabaseError, match=rf"database 't' is being written by pid {a.pid} on "):
        write_documents(db, [_write("from b")])
    _release(tmp_path)
    assert a.wait(60) == 0
    assert _texts(db_path) == ["first", "from a"]


def test_a_dead_writers_unfinished_write_is_undone_by_the_next(tmp_path: Path, db_path: Path) -> None:
    a = _paused_writer(tmp_path, db_path, "from a", "more from a")
    a.send_signal(signal.SIGKILL)
    a.wait(30)
    db = open_database(Location("t", str(db_path)), writable=True)
    db.write_policy = WaitPolicy(0)  # the kernel dropped the dead writer's lock: no waiting
    write_documents(db, [_write("from b")])
    assert _texts(db_path) == ["first", "from b"]
    assert "pending_write" not in open_database(Location("t", str(db_path))).meta


def test_vacuum_during_a_failing_add_leaves_none_of_its_documents(tmp_path: Path, db_path: Path) -> None:
    a = _paused_writer(tmp_path, db_path, "a one", "a two", fail=True)
    vac = _spawn(_VACUUM, [str(db_path)], None, tmp_path / "v.err")
    _wait_for(lambda: "being written by" in (tmp_path / "v.err").read_text(), "vacuum to wait")
    _release(tmp_path)
    assert a.wait(60) != 0
    assert vac.wait(60) == 0, (tmp_path / "v.err").read_text()
    assert _texts(db_path) == ["first"]
    assert _chunk_counts(db_path) == {2}


def test_object_store_writers_exclude_each_other_by_lease(s3_server: str, tmp_path: Path) -> None:
    options = {"endpoint": s3_server, "allow_http": "true", "region": "us-east-1"}
    loc = Location("remote", f"s3://lab/lease-{tmp_path.name}.lancedb", storage_options=options)
    first = open_database(loc, create_with=SPEC, writable=True)
    second = open_database(loc, writable=True)
    second.write_policy = WaitPolicy(0)
    with exclusive(first):
        with pytest.raises(DatabaseError, match=rf"'remote' is being written by pid {os.getpid()} on "):
            write_documents(second, [_write("from second")])
        write_documents(first, [_write("from first")])
    write_documents(second, [_write("from second")])
    assert sorted(d.title for d in wait(reads.list_documents(open_database(loc), limit=None))) == [
        "from first",
        "from secon",
    ]


def test_an_abandoned_object_store_lease_is_taken_over(s3_server: str, tmp_path: Path) -> None:
    options = {"endpoint": s3_server, "allow_http": "true", "region": "us-east-1"}
    loc = Location("remote", f"s3://lab/stale-{tmp_path.name}.lancedb", storage_options=options)
    db = open_database(loc, create_with=SPEC, writable=True)
    dead = Owner("dead", 1, "elsewhere", "haiku add", 0.0, time.time() - LEASE_TTL_SECONDS - 1)
    db.set_meta(LEASE_KEY, json.dumps(asdict(dead)))
    db.write_policy = WaitPolicy(0)
    write_documents(db, [_write("after")])
    assert wait(reads.count_documents(db)) == 1


def test_a_failing_writer_never_undoes_data_another_committed_after_it_opened(
    tmp_path: Path, db_path: Path
) -> None:
    stale = open_database(Location("t", str(db_path)), writable=True)  # opened before B's write
    b = _spawn(_WRITER, [str(db_path), "ok", "from b"], None, tmp_path / "b.err")
    assert b.wait(60) == 0, (tmp_path / "b.err").read_text()
    with pytest.raises(RuntimeError, match="on purpose"), atomic_write(stale):
        write_documents(stale, [_write("from a")])
        raise RuntimeError("failing on purpose after writing")
    assert _texts(db_path) == ["first", "from b"]
    assert _chunk_counts(db_path) == {2}


def _s3(s3_server: str, tmp_path: Path, stem: str) -> tuple[Location, dict[str, str]]:
    options = {"endpoint": s3_server, "allow_http": "true", "region": "us-east-1"}
    return Location("t", f"s3://lab/{stem}-{tmp_path.name}.lancedb", storage_options=options), options


@pytest.mark.slow
def test_object_store_second_writer_process_waits_for_the_first(s3_server: str, tmp_path: Path) -> None:
    loc, options = _s3(s3_server, tmp_path, "procs")
    write_documents(open_database(loc, create_with=SPEC, writable=True), [_write("first")])
    a = _paused_writer(tmp_path, loc.uri, "from a", options=options)
    b = _spawn(_WRITER, [loc.uri, "ok", "from b"], None, tmp_path / "b.err", options)
    _wait_for(lambda: f"being written by pid {a.pid}" in (tmp_path / "b.err").read_text(), "B's note")
    assert b.poll() is None
    assert sorted(d.title for d in wait(reads.list_documents(open_database(loc), limit=None))) == ["first"]
    _release(tmp_path)
    assert a.wait(120) == 0 and b.wait(120) == 0, (tmp_path / "b.err").read_text()
    assert sorted(d.title for d in wait(reads.list_documents(open_database(loc), limit=None))) == [
        "first",
        "from a",
        "from b",
    ]


@pytest.mark.slow
def test_a_writer_whose_lease_lapsed_neither_writes_nor_undoes_the_next_owner(
    s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loc, _ = _s3(s3_server, tmp_path, "lapsed")
    frozen = open_database(loc, create_with=SPEC, writable=True)
    other = open_database(loc, writable=True)
    other.write_policy = WaitPolicy(0)
    monkeypatch.setattr(writer_lock, "LEASE_TTL_SECONDS", 5.0)
    lapsed = "'t' stopped being this writer's: its lease lapsed"
    with pytest.raises(DatabaseError, match=lapsed), exclusive(frozen):
        lease = frozen.writer_lock
        lease._stop.set()  # the writer freezes: its heartbeat stops
        lease._thread.join()
        time.sleep(5.2)
        write_documents(other, [_write("from other")])  # takes the lapsed lease over
        write_documents(frozen, [_write("from frozen")])
    after = open_database(loc, writable=True)
    assert [d.title for d in wait(reads.list_documents(after, limit=None))] == ["from other"]
    assert "pending_write" not in after.meta


@pytest.mark.slow
def test_a_commit_that_lands_after_its_lease_was_taken_over_is_not_reported_stored(
    s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haiku_cli.store.handle import PENDING_WRITE

    loc, _ = _s3(s3_server, tmp_path, "late")
    slow = open_database(loc, create_with=SPEC, writable=True)
    other = open_database(loc, writable=True)
    other.write_policy = WaitPolicy(0)
    monkeypatch.setattr(writer_lock, "LEASE_TTL_SECONDS", 5.0)
    delete_meta = slow.delete_meta

    def late_commit(key: str) -> None:
        if key == PENDING_WRITE:
            # The commit (the journal's removal) starts with the lease held, then its requests take
            # longer than the lease lives: meanwhile another writer takes over and undoes this write.
            lease = slow.writer_lock
            lease._stop.set()
            lease._thread.join()
            time.sleep(5.2)
            write_documents(other, [_write("from other")])
        delete_meta(key)

    monkeypatch.setattr(slow, "delete_meta", late_commit)
    with pytest.raises(DatabaseError, match=r"^database 't': this write's commit took longer than its lease"):
        write_documents(slow, [_write("from slow")])
    after = open_database(loc)
    assert [d.title for d in wait(reads.list_documents(after, limit=None))] == ["from other"]


def test_a_writer_that_waited_longer_than_a_lease_lives_writes_with_a_fresh_one(
    s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    ttl = 2.0 * slowness()  # a busy machine delays renewals and the waiter's write: the lease scales with it
    monkeypatch.setattr(writer_lock, "LEASE_TTL_SECONDS", ttl)
    loc, _ = _s3(s3_server, tmp_path, "waited")
    first = open_database(loc, create_with=SPEC, writable=True)
    second = open_database(loc, writable=True)
    second.write_policy = WaitPolicy(60)
    held = threading.Event()

    def hold() -> None:
        with exclusive(first):
            held.set()
            time.sleep(1.5 * ttl)  # longer than the lease lives: its heartbeat keeps it

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    write_documents(second, [_write("waited")])  # took the lease after waiting 1.5 ttl: not lapsed at once
    holder.join()
    assert [d.title for d in wait(reads.list_documents(open_database(loc), limit=None))] == ["waited"]


def test_a_waiting_writer_says_so_once_and_when_it_is_done(tmp_path: Path, monkeypatch) -> None:
    import threading

    # Before, the note came again every 15 s (7 times in 90 s): made frequent here, it would repeat.
    monkeypatch.setattr(writer_lock, "_NOTE_EVERY_SECONDS", 0.1, raising=False)
    first = writer_lock.acquire(tmp_path, "notes", WaitPolicy())
    heard: list[str] = []
    policy = WaitPolicy(30, notify=heard.append, waited=lambda: heard.append("done"))
    second: list[object] = []
    waiter = threading.Thread(target=lambda: second.append(writer_lock.acquire(tmp_path, "notes", policy)))
    waiter.start()
    _wait_for(lambda: len(heard) == 1, "the waiting writer to say why it waits")
    time.sleep(1.0)  # several polls (every 0.1 s) while the first holds the lock: none says it again
    first.release()
    waiter.join(30)
    second[0].release()
    assert len(heard) == 2 and heard[1] == "done"
    assert heard[0].startswith("waiting for database 'notes': it is being written by pid")


def test_a_waiting_writer_is_served_before_the_holder_takes_the_lock_again(tmp_path: Path) -> None:
    # `haiku watch` syncs source after source, each a write of its own: it lets the lock go and asks for
    # it again at once. A writer already waiting goes first (it waited out its whole wait before).
    import threading

    from haiku_cli.store.writer_line import is_marker

    holder = writer_lock.acquire(tmp_path, "notes", WaitPolicy())
    served: list[str] = []

    def write(name: str) -> None:
        lock = writer_lock.acquire(tmp_path, "notes", WaitPolicy(60))
        served.append(name)
        lock.release()

    waiting = threading.Thread(target=write, args=("waiting",))
    waiting.start()
    deadline = time.monotonic() + 60
    while not any(is_marker(p.name) for p in tmp_path.iterdir()):  # it joined the line
        assert time.monotonic() < deadline and waiting.is_alive()
        time.sleep(0.01)
    holder.release()
    write("holder again")  # at once, as a watch's next sync does
    waiting.join(60)
    assert served == ["waiting", "holder again"]
    assert not any(is_marker(p.name) for p in tmp_path.iterdir())  # each left the line


def test_a_waiter_killed_in_the_line_holds_up_no_one(tmp_path: Path) -> None:
    from haiku_cli.store.writer_line import Files, Place

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    marker = tmp_path / Place(Files(tmp_path), "dead").join().name
    marker.write_text(json.dumps({"pid": int(gone.stdout), "host": os.uname().nodename, "at": 0}))
    writer_lock.acquire(tmp_path, "notes", WaitPolicy(0)).release()  # not refused: the dead waiter is passed
    assert not marker.exists()


def _waiting_markers(s3_server: str, loc: Location) -> list[str]:
    """The markers of writers waiting in an `s3://` database's line, as the store lists them."""
    import boto3

    from haiku_cli.store.writer_line import is_marker

    prefix = loc.uri.removeprefix("s3://lab/") + "/"
    listed = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").list_objects_v2(
        Bucket="lab", Prefix=prefix, Delimiter="/"
    )
    return [o["Key"] for o in listed.get("Contents", []) if is_marker(o["Key"].rsplit("/", 1)[-1])]


def test_an_object_store_writer_waiting_is_served_before_the_holder_takes_the_lease_again(
    s3_server: str, tmp_path: Path
) -> None:
    # The same line as a local database's, for an `s3://` database's lease: a watch syncing source after
    # source gives the lease back and asks again at once; the writer waiting behind it goes first.
    import threading

    loc, _ = _s3(s3_server, tmp_path, "line")
    looping = open_database(loc, create_with=SPEC, writable=True)
    holder = writer_lock.acquire(looping, "t", WaitPolicy())
    served: list[str] = []

    def write(name: str, db) -> None:
        lock = writer_lock.acquire(db, "t", WaitPolicy(60))
        served.append(name)
        lock.release()

    waiting = threading.Thread(target=write, args=("waiting", open_database(loc, writable=True)))
    waiting.start()
    _wait_for(lambda: bool(_waiting_markers(s3_server, loc)) or not waiting.is_alive(), "it to join the line")
    holder.release()
    write("holder again", looping)  # at once, as a watch's next sync does
    waiting.join(60)
    assert served == ["waiting", "holder again"]
    assert _waiting_markers(s3_server, loc) == []  # each left the line


def test_a_killed_object_store_writers_lease_is_taken_over_at_once_on_its_machine(
    s3_server: str, tmp_path: Path
) -> None:
    loc, options = _s3(s3_server, tmp_path, "killed")
    write_documents(open_database(loc, create_with=SPEC, writable=True), [_write("first")])
    a = _paused_writer(tmp_path, loc.uri, "from a", "more from a", options=options)
    a.send_signal(signal.SIGKILL)
    a.wait(30)
    db = open_database(loc, writable=True)
    db.write_policy = WaitPolicy(0)  # its lease has a minute to live: only its gone pid lets this in
    write_documents(db, [_write("from b")])
    assert sorted(d.title for d in wait(reads.list_documents(open_database(loc), limit=None))) == [
        "first",
        "from b",
    ]
    assert "pending_write" not in open_database(loc).meta


def test_a_lease_naming_this_host_but_another_machine_is_waited_out(s3_server: str, tmp_path: Path) -> None:
    # The same host name in another container (another pid namespace) or on another computer: its pid
    # says nothing here.
    import socket

    loc, _ = _s3(s3_server, tmp_path, "elsewhere")
    db = open_database(loc, create_with=SPEC, writable=True)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    now = time.time()
    holder = Owner("x", int(gone.stdout), socket.gethostname(), "haiku add", now, now, 60.0, "another-boot:1")
    db.set_meta(LEASE_KEY, json.dumps(asdict(holder)))
    db.write_policy = WaitPolicy(0)
    with pytest.raises(DatabaseError, match=rf"being written by pid {holder.pid} on "):
        write_documents(db, [_write("too soon")])
