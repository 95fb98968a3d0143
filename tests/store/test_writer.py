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
from haiku_cli.store import EmbedderSpec, Location, open_database, reads
from haiku_cli.store.writer import LEASE_KEY, LEASE_TTL_SECONDS, Owner, WaitPolicy, exclusive
from haiku_cli.store.writes import write_documents
from tests.store.test_writes import _write

SPEC = EmbedderSpec("test:e", 4)

# A writer process: adds the documents named on its command line as one write, in one batch each.
_WRITER = textwrap.dedent(
    """
    import sys
    from haiku_cli.store import Location, open_database
    from haiku_cli.store.transaction import atomic_write
    from haiku_cli.store.writer import WaitPolicy
    from haiku_cli.store.writes import write_documents
    from tests.store.test_writes import _write

    path, fail, *texts = sys.argv[1:]
    db = open_database(Location("t", path), writable=True)
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
    from haiku_cli.store.writer import WaitPolicy

    db = open_database(Location("t", sys.argv[1]), writable=True)
    db.write_policy = WaitPolicy(60, notify=lambda m: print(m, file=sys.stderr, flush=True))
    vacuum(db)
    """
)


def _spawn(script: str, args: list[str], pause: str | None, stderr: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
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


def _paused_writer(tmp_path: Path, db_path: Path, *texts: str, fail: bool = False) -> subprocess.Popen:
    """A writer stopped after it committed its first batch (its journal and data are on disk)."""
    gate = tmp_path / "gate"
    gate.mkdir(exist_ok=True)
    proc = _spawn(
        _WRITER, [str(db_path), "fail" if fail else "ok", *texts], f"data-written:{gate}", tmp_path / "a.err"
    )
    _wait_for(lambda: any(gate.glob("data-written.*.reached")), "the first writer to pause")
    return proc


def _release(tmp_path: Path) -> None:
    (tmp_path / "gate" / "data-written.go").touch()


def _texts(path: Path) -> list[str]:
    db = open_database(Location("t", str(path)))
    return sorted(d.title for d in reads.list_documents(db, limit=None))


def _chunk_counts(path: Path) -> set[int]:
    db = open_database(Location("t", str(path)))
    return {len(reads.chunks_of(db, d.id)) for d in reads.list_documents(db, limit=None)}


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
    assert sorted(d.title for d in reads.list_documents(open_database(loc), limit=None)) == [
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
    assert reads.count_documents(db) == 1
