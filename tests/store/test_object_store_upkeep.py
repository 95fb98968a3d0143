"""Upkeep of a database on a real S3-compatible server (moto on 127.0.0.1) behind a proxy that slows the
store down: a vacuum longer than the lease's heartbeat leaves every file a commit names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from haiku_cli.errors import DatabaseError, ExitCode
from haiku_cli.store import EmbedderSpec, Location, open_database, reads, writer_lock
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_writes import delete_document, write_documents
from haiku_cli.store.maintenance import vacuum
from haiku_cli.store.writer_lock import exclusive
from tests.store.test_document_writes import _write
from tests.support.stall_proxy import StallingProxy

SPEC = EmbedderSpec("test:e", 4)


def _location(endpoint: str, tmp_path: Path, stem: str) -> Location:
    options = {"endpoint": endpoint, "allow_http": "true", "region": "us-east-1"}
    return Location("t", f"s3://lab/{stem}-{tmp_path.name}.lancedb", storage_options=options)


def _titles(loc: Location) -> list[str]:
    return sorted(d.title for d in wait(reads.list_documents(open_database(loc), limit=None)))


@pytest.mark.slow
def test_a_vacuum_longer_than_the_heartbeat_leaves_the_database_readable(
    s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The heartbeat renews every 0.5 s, while each of the vacuum's requests waits 0.0125 s at the proxy:
    # 4-6 heartbeat commits land on the meta table during each ~4 s vacuum while it cleans the table up
    # (as many as renewals every 2 s did during a 0.05 s-per-request vacuum of ~10 s). The lease keeps
    # 12 s and its 6 s hold: a 3 s hold is shorter than a renewal through the proxy can take on a loaded
    # 2-core machine; renewing more often leaves the hold as it is.
    monkeypatch.setattr(writer_lock, "LEASE_TTL_SECONDS", 12.0)
    monkeypatch.setattr(writer_lock, "_RENEW_FRACTION", 1 / 24)
    direct = _location(s3_server, tmp_path, "slow")
    first = open_database(direct, create_with=SPEC, writable=True)
    for i in range(3):
        write_documents(first, [_write(f"doc {i}")])
    with StallingProxy(int(s3_server.rsplit(":", 1)[1]), delay=0.0125) as proxy:
        slow = open_database(_location(proxy.endpoint, tmp_path, "slow"), writable=True)
        for round in range(2):
            vacuum(slow)
            assert _titles(direct) == [f"doc {i}" for i in range(3 + round)]
            write_documents(slow, [_write(f"doc {3 + round}")])
    db = open_database(direct, writable=True)
    doc = wait(reads.list_documents(db, limit=None))[0]
    delete_document(db, doc.id)
    vacuum(db)
    assert len(_titles(direct)) == 4


def test_a_vacuum_whose_lease_lapsed_stops_before_removing_anything(
    s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loc = _location(s3_server, tmp_path, "lapse")
    db = open_database(loc, create_with=SPEC, writable=True)
    write_documents(db, [_write("kept")])
    # Only the vacuum's lease is short: a 2 s lease on the setup's write lapsed beside a loaded machine.
    monkeypatch.setattr(writer_lock, "LEASE_TTL_SECONDS", 2.0)
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


def _config(write_config, endpoint: str, tmp_path: Path) -> None:
    write_config(
        f"""
[databases.papers]
uri = "s3://lab/papers-{tmp_path.name}.lancedb"
storage_options = {{ endpoint = "{endpoint}", allow_http = true, region = "us-east-1" }}
"""
    )


def _haiku(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", *args],
        env={**os.environ, **env},
        stderr=subprocess.PIPE,
        text=True,
    )


def _paused(tmp_path: Path, point: str, lease: str, *args: str) -> tuple[subprocess.Popen, Path]:
    """`haiku ARGS` stopped at the pause point `point` (a 1 s storage timeout and a `lease` s lease)."""
    from tests.store.test_writer_lock import _wait_for

    gate = tmp_path / "gate"
    gate.mkdir()
    env = {"HAIKU_TEST_PAUSE": f"{point}:{gate}", "HAIKU_STORAGE_TIMEOUT": "1", "HAIKU_LEASE_SECONDS": lease}
    process = _haiku(*args, env=env)
    # Starting a haiku process takes minutes on a loaded machine.
    _wait_for(lambda: any(gate.glob("*.reached")), f"haiku {args[0]} to reach {point}", timeout=300)
    return process, gate / f"{point}.go"


def _listed_titles(cli) -> list[str]:
    return sorted(d["title"] for d in json.loads(cli("list", "-d", "papers", "--json").stdout)["documents"])


@pytest.mark.slow
def test_a_write_whose_index_upkeep_fails_says_it_was_stored_and_what_finishes_it(
    cli, write_config, s3_server: str, tmp_path: Path
) -> None:
    with StallingProxy(int(s3_server.rsplit(":", 1)[1])) as proxy:
        _config(write_config, proxy.endpoint, tmp_path)
        assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
        writer_process, go = _paused(
            tmp_path, "committed", "10", "add", "Owls hunt voles at night.", "-d", "papers"
        )
        proxy.stall()  # the store stops answering after the write was committed, during its upkeep
        go.touch()
        _, stderr = writer_process.communicate(timeout=300)
        proxy.resume()
    assert writer_process.returncode == ExitCode.DATABASE, stderr
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith(
        "haiku: database 'papers': the write was stored, but the index upkeep after it failed: "
    )
    assert stderr.rstrip().endswith("; haiku vacuum --database papers finishes it")
    _config(write_config, s3_server, tmp_path)
    assert _listed_titles(cli) == ["Owls hunt voles at night.", "Peregrine falcons stoop onto prey."]
    hits = json.loads(cli("search", "voles", "-d", "papers", "--type", "fts", "--json").stdout)["hits"]
    assert [h["content"] for h in hits] == ["Owls hunt voles at night."]
    vacuumed = cli("vacuum", "-d", "papers")
    assert vacuumed.exit_code == 0, vacuumed.stderr


@pytest.mark.slow
@pytest.mark.parametrize("store", ["local", "s3"])
def test_vacuums_beside_a_writer_and_readers_all_succeed(
    cli, write_config, s3_server: str, tmp_path: Path, store: str
) -> None:
    if store == "s3":
        _config(write_config, s3_server, tmp_path)
    else:
        write_config(f'[databases]\npapers = "{tmp_path}/papers.lancedb"\n')
    for text in ("Peregrine falcons stoop onto prey.", "Kestrels hover over fields.", "Owls hunt at night."):
        assert cli("add", text, "-d", "papers").exit_code == 0
    # On S3 each lease is renewed every 20/6 s, so renewals land while the other process vacuums; a
    # shorter lease lapsed on a loaded 2-core machine (a renewal through moto took over its 3 s hold).
    env = {"HAIKU_LEASE_SECONDS": "20"}
    runs = [
        _haiku("vacuum", "-d", "papers", env=env),
        _haiku("add", "Harriers glide low over marshes.", "-d", "papers", env=env),
        _haiku("vacuum", "-d", "papers", env=env),
    ]
    failed_reads = []
    while any(r.poll() is None for r in runs):
        for args in (("search", "falcons", "--json"), ("list", "--json")):
            read = cli(*args, "-d", "papers")
            if read.exit_code != 0:
                failed_reads.append(read.stderr)
    errors = [r.communicate()[1] for r in runs]
    assert [r.returncode for r in runs] == [0, 0, 0], errors
    assert failed_reads == []
    listed = json.loads(cli("list", "-d", "papers", "--json").stdout)["documents"]
    assert len(listed) == 4
    deleted = cli("delete", listed[0]["id"], "-d", "papers")
    assert (deleted.exit_code, deleted.stderr) == (0, "")
    info = json.loads(cli("info", "-d", "papers", "--json").stdout)
    assert (info["documents"], info["chunks"]) == (3, 3)


@pytest.mark.slow
def test_a_commit_whose_answer_was_lost_is_reported_as_stored(
    cli, write_config, s3_server: str, tmp_path: Path
) -> None:
    from tests.store.test_writer_lock import _wait_for

    with StallingProxy(int(s3_server.rsplit(":", 1)[1])) as proxy:
        _config(write_config, proxy.endpoint, tmp_path)
        assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
        # A long lease: no heartbeat commits to the meta table while the commit is watched for.
        add = ("add", "Owls hunt voles at night.", "-d", "papers")
        writer_process, go = _paused(tmp_path, "before-commit", "600", *add)
        # The commit that removes the journal reaches the store, then the store stops answering.
        proxy.stall_after(b"PUT ", b"meta.lance/_versions/")
        go.touch()
        _wait_for(lambda: not proxy.flowing.is_set(), "the commit to reach the store", timeout=300)
        time.sleep(5)  # the request and its retries give up, unanswered
        proxy.resume()
        _, stderr = writer_process.communicate(timeout=300)
    assert writer_process.returncode == 0, stderr
    _config(write_config, s3_server, tmp_path)
    assert _listed_titles(cli) == ["Owls hunt voles at night.", "Peregrine falcons stoop onto prey."]


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["drop", "stall"])
def test_an_add_src_cut_off_mid_way_leaves_the_database_as_it_was(
    cli, write_config, s3_server: str, tmp_path: Path, fault: str
) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    for i in range(3):
        (folder / f"f{i}.md").write_text(
            f"# Heron {i}\n\n" + " ".join(f"heron{i} wades {j}" for j in range(300))
        )
    with StallingProxy(int(s3_server.rsplit(":", 1)[1])) as proxy:
        _config(write_config, proxy.endpoint, tmp_path)
        assert cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers").exit_code == 0
        # A short lease, so that the next writer takes over from the cut-off one within seconds.
        writer_process, go = _paused(tmp_path, "data-written", "4", "add-src", str(folder), "-d", "papers")
        if fault == "drop":
            proxy.forbid()  # every connection cut and refused: no retry gets through
        else:
            proxy.stall()
        go.touch()
        _, stderr = writer_process.communicate(timeout=300)
    assert writer_process.returncode == ExitCode.DATABASE, stderr
    assert stderr.startswith("haiku: database 'papers' ") and len(stderr.splitlines()) == 1, stderr
    _config(write_config, s3_server, tmp_path)
    assert _listed_titles(cli) == ["Peregrine falcons stoop onto prey."]
    again = cli("add-src", str(folder), "-d", "papers")  # takes the lapsed lease over and undoes the rest
    assert again.exit_code == 0, again.stderr
    hits = json.loads(cli("search", "heron1 wades", "-d", "papers", "--json").stdout)["hits"]
    assert hits and hits[0]["document_title"] == "Heron 1"
    info = json.loads(cli("info", "-d", "papers", "--json").stdout)
    assert info["documents"] == 4
