"""Upkeep of a database on a real S3-compatible server (moto on 127.0.0.1) behind a proxy that slows the
store down: a vacuum longer than the lease's heartbeat leaves every file a commit names."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from haiku_cli.errors import DatabaseError
from haiku_cli.store import EmbedderSpec, Location, open_database, reads, writer
from haiku_cli.store.maintenance import vacuum
from haiku_cli.store.writer import exclusive
from haiku_cli.store.writes import delete_document, write_documents
from tests.store.test_writes import _write
from tests.support.stall_proxy import StallingProxy

SPEC = EmbedderSpec("test:e", 4)


def _location(endpoint: str, tmp_path: Path, stem: str) -> Location:
    options = {"endpoint": endpoint, "allow_http": "true", "region": "us-east-1"}
    return Location("t", f"s3://lab/{stem}-{tmp_path.name}.lancedb", storage_options=options)


def _titles(loc: Location) -> list[str]:
    return sorted(d.title for d in reads.list_documents(open_database(loc), limit=None))


@pytest.mark.slow
def test_a_vacuum_longer_than_the_heartbeat_leaves_the_database_readable(
    s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The heartbeat renews every second, while each of the vacuum's requests waits 0.05 s at the proxy:
    # dozens of heartbeat commits land on the meta table while the vacuum cleans it up.
    monkeypatch.setattr(writer, "LEASE_TTL_SECONDS", 6.0)
    direct = _location(s3_server, tmp_path, "slow")
    first = open_database(direct, create_with=SPEC, writable=True)
    for i in range(3):
        write_documents(first, [_write(f"doc {i}")])
    with StallingProxy(int(s3_server.rsplit(":", 1)[1]), delay=0.05) as proxy:
        slow = open_database(_location(proxy.endpoint, tmp_path, "slow"), writable=True)
        for round in range(2):
            vacuum(slow)
            assert _titles(direct) == [f"doc {i}" for i in range(3 + round)]
            write_documents(slow, [_write(f"doc {3 + round}")])
    db = open_database(direct, writable=True)
    doc = reads.list_documents(db, limit=None)[0]
    delete_document(db, doc.id)
    vacuum(db)
    assert len(_titles(direct)) == 4


def test_a_vacuum_whose_lease_lapsed_stops_before_removing_anything(
    s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "LEASE_TTL_SECONDS", 2.0)
    loc = _location(s3_server, tmp_path, "lapse")
    db = open_database(loc, create_with=SPEC, writable=True)
    write_documents(db, [_write("kept")])
    versions = len(db.documents.list_versions())
    with exclusive(db):
        lease = db.writer_lock
        lease._stop.set()  # the vacuum's process freezes: its heartbeat stops
        lease._thread.join()
        time.sleep(lease.held_for)
        with pytest.raises(DatabaseError, match="'t' stopped being this writer's: its lease lapsed"):
            vacuum(db)
    assert len(open_database(loc).documents.list_versions()) == versions
    assert _titles(loc) == ["kept"]
