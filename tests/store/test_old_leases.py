"""An `s3://` database's writer lease left by an older haiku (its record has no `ttl` nor `machine`): it is
respected while its holder renews it, and taken over once it lapsed, saying so."""

from __future__ import annotations

import json
import time
from pathlib import Path

from haiku_cli.errors import ExitCode
from haiku_cli.store import Location, open_database
from haiku_cli.store.writer_lock import LEASE_KEY, LEASE_TTL_SECONDS
from tests.support.timing import slowness


def _old_lease(heartbeat: float) -> str:
    """The lease record as the first releases wrote it: these six fields, in this order."""
    record = {
        "token": "0123456789abcdef0123456789abcdef",
        "pid": 4242,
        "host": "old-host",
        "command": "haiku add-src",
        "started": heartbeat - 600.0,
        "heartbeat": heartbeat,
    }
    return json.dumps(record)


def test_a_lease_an_older_haiku_left_is_waited_out_then_taken_over_saying_so(
    cli, write_config, s3_server: str, tmp_path: Path, monkeypatch
) -> None:
    uri = f"s3://lab/old-lease-{tmp_path.name}.lancedb"
    options = {"endpoint": s3_server, "allow_http": "true", "region": "us-east-1"}
    write_config(
        f"""
[databases.papers]
uri = "{uri}"
storage_options = {{ endpoint = "{s3_server}", allow_http = true, region = "us-east-1" }}
"""
    )
    assert cli("add", "Kestrels hover over fields hunting voles.", "-d", "papers").exit_code == 0
    db = open_database(Location("papers", uri, storage_options=options), writable=True)

    # An older haiku holds the lease and renews it: it is respected, its holder named.
    db.set_meta(LEASE_KEY, _old_lease(time.time()))
    monkeypatch.setenv("HAIKU_WRITE_WAIT", "0")
    refused = cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers")
    assert refused.exit_code == ExitCode.DATABASE, refused.stderr
    assert "is being written by pid 4242 on old-host (haiku add-src" in refused.stderr

    # Then it dies: its last renewal lapses a few seconds from now, well within the next writer's wait.
    lapse = 2.0 * slowness()
    db.set_meta(LEASE_KEY, _old_lease(time.time() - LEASE_TTL_SECONDS + lapse))
    monkeypatch.setenv("HAIKU_WRITE_WAIT", "60")
    taken = cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers")
    assert taken.exit_code == 0, taken.stderr
    lines = [line for line in taken.stderr.splitlines() if "took over" in line]
    assert len(lines) == 1, taken.stderr
    assert lines[0].startswith("haiku: database 'papers': took over the writer lease of pid 4242 on old-host")
    why = f"its lease was not renewed for {LEASE_TTL_SECONDS:g} s, so its writer is presumed dead"
    assert lines[0].endswith(why)
    listed = json.loads(cli("list", "-d", "papers", "--json").stdout)["documents"]
    assert len(listed) == 2
    assert LEASE_KEY not in open_database(Location("papers", uri, storage_options=options)).meta


def test_doctor_fix_says_it_took_over_a_lapsed_lease(
    cli, write_config, s3_server: str, tmp_path: Path
) -> None:
    uri = f"s3://lab/doctor-lease-{tmp_path.name}.lancedb"
    options = {"endpoint": s3_server, "allow_http": "true", "region": "us-east-1"}
    write_config(
        f"""
[databases.papers]
uri = "{uri}"
storage_options = {{ endpoint = "{s3_server}", allow_http = true, region = "us-east-1" }}
"""
    )
    assert cli("add", "Kestrels hover over fields hunting voles.", "-d", "papers").exit_code == 0
    db = open_database(Location("papers", uri, storage_options=options), writable=True)
    db.set_meta(LEASE_KEY, _old_lease(time.time() - 10 * LEASE_TTL_SECONDS))  # its writer long dead
    fixed = cli("doctor", "--fix", "-d", "papers")
    assert fixed.exit_code == 0, fixed.stderr
    lines = [line for line in fixed.stderr.splitlines() if "took over" in line]
    assert len(lines) == 1, fixed.stderr
    assert lines[0].startswith("haiku: database 'papers': took over the writer lease of pid 4242 on old-host")
    assert LEASE_KEY not in open_database(Location("papers", uri, storage_options=options)).meta
