"""`haiku publish`: a database's state copied to a bucket (moto on 127.0.0.1) or a folder, read read-only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from haiku_cli.errors import ExitCode
from tests.store.test_writer_lock import _wait_for

FIRST = "Kestrels hover over fields hunting voles."
SECOND = "Peregrine falcons stoop at great speed onto prey."


def _config(write_config, endpoint: str, tmp_path: Path) -> str:
    """`src` local, `team` its publish in the bucket (read-only, as a reader configures it); the URI."""
    uri = f"s3://lab/team-{tmp_path.name}"
    write_config(
        f"""
[databases]
src = "{tmp_path}/src.lancedb"
[databases.team]
uri = "{uri}"
read_only = true
storage_options = {{ endpoint = "{endpoint}", allow_http = true, region = "us-east-1" }}
"""
    )
    return uri


@pytest.fixture
def target(write_config, tmp_path: Path, make_db) -> Path:
    """`src` holding FIRST, and `team` its publish in a folder (read-only, as a reader configures it)."""
    make_db("src", [FIRST])
    folder = tmp_path / "published"
    write_config(
        f'[databases]\nsrc = "{tmp_path}/src.lancedb"\nteam = {{ uri = "{folder}", read_only = true }}\n'
    )
    return folder


@pytest.fixture
def uri(cli, write_config, s3_server: str, tmp_path: Path) -> str:
    """`src` holding FIRST, and `team` its publish in the bucket; the publish's URI."""
    at = _config(write_config, s3_server, tmp_path)
    assert cli("add", FIRST, "-d", "src").exit_code == 0
    return at


def _objects(endpoint: str, prefix: str) -> dict[str, str]:
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket="lab", Prefix=prefix)
    return {o["Key"]: o["ETag"] for page in pages for o in page.get("Contents", [])}


def _titles(cli, database: str) -> list[str]:
    listed = cli("list", "-d", database, "--json")
    assert listed.exit_code == 0, listed.stderr
    return sorted(d["title"] for d in json.loads(listed.stdout)["documents"])


def _publish(cli, uri: str, *more: str) -> dict:
    done = cli("publish", "-d", "src", "--to", uri, "--json", *more)
    assert done.exit_code == 0, done.stderr
    return json.loads(done.stdout)


def _paused_publish(tmp_path: Path, uri: str, point: str) -> tuple[subprocess.Popen[str], Path]:
    """`haiku publish` in its own process, stopped at a checkpoint; touch the path returned to go on.

    Its lease on the bucket lapses 2 s after a kill, so the next publish need not wait out the default.
    """
    gate = tmp_path / f"gate-{point}"
    gate.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli", "publish", "-d", "src", "--to", uri],
        env={**os.environ, "HAIKU_TEST_PAUSE": f"{point}:{gate}", "HAIKU_LEASE_SECONDS": "2"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: any(gate.glob("*.reached")) or proc.poll() is not None, f"publish to reach {point}")
    assert proc.poll() is None, proc.communicate()
    return proc, gate / f"{point}.go"


def test_publish_to_s3_is_searched_read_only_beside_local_and_republished_writing_nothing(
    cli, uri: str, s3_server: str
) -> None:
    first = _publish(cli, uri)
    assert not first["unchanged"] and first["files"] > 0 and first["bytes"] > 0
    assert first["published"]["source"] == "src" and first["published"]["tag"] is None

    hits = json.loads(cli("search", "hunting birds", "-d", "src", "-d", "team", "--json").stdout)["hits"]
    assert {h["database"] for h in hits} == {"src", "team"}
    info = json.loads(cli("info", "-d", "team", "--json").stdout)
    assert info["read_only"] and info["published"]["source"] == "src" and info["documents"] == 1
    listed = {d["database"]: d for d in json.loads(cli("databases", "--json").stdout)}
    assert listed["team"]["published"]["at"] == first["published"]["at"]
    assert listed["src"]["published"] is None
    assert "published" in cli("info", "-d", "team").stdout
    untouched = _objects(s3_server, uri.removeprefix("s3://lab/"))
    doctor = cli("doctor", "-d", "team", "--json")
    assert doctor.exit_code == 0, doctor.stdout
    checks = {c["check"]: c["status"] for c in json.loads(doctor.stdout)["databases"][0]["checks"]}
    assert checks["published"] == "ok" and "sources" not in checks
    assert _objects(s3_server, uri.removeprefix("s3://lab/")) == untouched  # checked without writing

    # A reader refuses to write it: configured read-only, and a published copy besides.
    refused = cli("add", SECOND, "-d", "team")
    assert refused.exit_code == ExitCode.DATABASE and len(refused.stderr.splitlines()) == 1

    # Unchanged: nothing is written, not even a lock.
    before = _objects(s3_server, uri.removeprefix("s3://lab/"))
    again = _publish(cli, uri)
    assert again["unchanged"] and again["files"] == 0
    assert _objects(s3_server, uri.removeprefix("s3://lab/")) == before
    assert "nothing written" in cli("publish", "-d", "src", "--to", uri).stdout


def test_a_second_publish_copies_only_what_changed_and_readers_switch_at_its_commit(
    cli, uri: str, s3_server: str, tmp_path: Path
) -> None:
    _publish(cli, uri)
    before = _objects(s3_server, uri.removeprefix("s3://lab/"))
    assert cli("add", SECOND, "-d", "src").exit_code == 0

    publisher, go = _paused_publish(tmp_path, uri, "publish-manifests-copied")
    try:
        # Every file of the new state is in the bucket, but readers still read the last publish whole.
        assert _titles(cli, "team") == [FIRST]
        fts = json.loads(cli("search", "falcons", "-d", "team", "--type", "fts", "--json").stdout)
        assert fts["hits"] == []
        go.touch()
        _, stderr = publisher.communicate(timeout=120)
        assert publisher.returncode == 0, stderr
    finally:
        if publisher.poll() is None:
            publisher.kill()
            publisher.wait()
    assert _titles(cli, "team") == sorted([FIRST, SECOND])
    after = _objects(s3_server, uri.removeprefix("s3://lab/"))
    # Incremental: nothing of the first publish was written again (same keys, same contents).
    assert {k: after[k] for k in before if k in after} == {k: v for k, v in before.items() if k in after}
    assert set(before) <= set(after)


@pytest.mark.parametrize("point", ["publish-data-copied", "publish-manifests-copied"])
def test_a_publish_killed_at_each_step_leaves_readers_on_the_last_and_the_next_finishes_it(
    cli, uri: str, tmp_path: Path, point: str
) -> None:
    _publish(cli, uri)
    assert cli("add", SECOND, "-d", "src").exit_code == 0
    publisher, _ = _paused_publish(tmp_path, uri, point)
    publisher.send_signal(signal.SIGKILL)
    publisher.communicate(timeout=60)
    assert _titles(cli, "team") == [FIRST]
    finished = _publish(cli, uri)
    assert not finished["unchanged"]
    assert _titles(cli, "team") == sorted([FIRST, SECOND])


def test_a_first_publish_killed_before_its_commit_is_not_a_database_until_the_next(
    cli, target: Path, tmp_path: Path
) -> None:
    publisher, _ = _paused_publish(tmp_path, str(target), "publish-manifests-copied")
    publisher.send_signal(signal.SIGKILL)
    publisher.communicate(timeout=60)
    missing = cli("list", "-d", "team")
    assert missing.exit_code == ExitCode.DATABASE and "does not exist yet" in missing.stderr
    _publish(cli, str(target))
    assert _titles(cli, "team") == [FIRST]


def test_publish_from_a_tag_to_a_folder_names_the_tag_and_goes_back_to_it(
    cli, target: Path, tmp_path: Path
) -> None:
    assert cli("tag", "create", "v1", "-d", "src").exit_code == 0
    assert cli("add", SECOND, "-d", "src").exit_code == 0
    assert _publish(cli, "team")["published"]["tag"] is None  # --to a configured database's name
    assert _titles(cli, "team") == sorted([FIRST, SECOND])
    # Back to an older state: its versions are older than the target's latest, and are what readers read.
    done = _publish(cli, "team", "--tag", "v1")
    assert done["published"]["tag"] == "v1"
    assert _titles(cli, "team") == [FIRST]
    assert "tag v1" in cli("info", "-d", "team").stdout
    # Another database is never published over this one's publish.
    (tmp_path / "other.lancedb").mkdir()
    other = cli("publish", "--db", str(tmp_path / "src.lancedb"), "--to", str(tmp_path / "src.lancedb"))
    assert other.exit_code == ExitCode.INPUT and "itself" in other.stderr
    elsewhere = cli("publish", "-d", "src", "--to", "gs://bucket/team")
    assert elsewhere.exit_code == ExitCode.INPUT and "not gs://" in elsewhere.stderr


def test_a_reader_older_than_the_publish_says_so_in_one_line(cli, target: Path) -> None:
    from haiku_cli.store.database import open_database
    from haiku_cli.store.location import Location
    from haiku_cli.store.published import PUBLISHED, published_info

    _publish(cli, str(target))
    db = open_database(Location("team", str(target)))
    info = published_info(db.meta)
    assert info is not None
    db.set_meta(PUBLISHED, info.model_copy(update={"haiku_version": "99.0.0"}).model_dump_json())
    shown = cli("info", "-d", "team")
    assert shown.exit_code == 0
    assert (
        shown.stderr.count("\n") == 1 and "published by haiku 99.0.0, newer than this haiku" in shown.stderr
    )
    db.set_meta("schema_version", "99")
    newer = cli("search", "kestrels", "-d", "team")
    assert newer.exit_code == ExitCode.DATABASE and "upgrade haiku" in newer.stderr
    assert len(newer.stderr.strip().splitlines()) == 1


def test_a_long_lived_reader_moves_to_the_next_publish(cli, target: Path, workspace) -> None:
    import anyio

    from haiku_cli import api

    _publish(cli, str(target))
    ws = workspace()
    team = ws.lookup("team")

    def titles() -> list[str]:
        listed = anyio.run(lambda: api.list_documents(ws, team, document_filter=None, limit=10, offset=0))
        return sorted(d.title for d in listed.documents)

    assert titles() == [FIRST]
    assert cli("add", SECOND, "-d", "src").exit_code == 0
    _publish(cli, str(target))
    for db in ws.pool._open.values():
        db.read_at = float("-inf")  # as a second later: the next query looks at the store again
    assert titles() == sorted([FIRST, SECOND])


def test_a_database_in_the_bucket_is_published_to_a_folder(
    cli, write_config, s3_server: str, tmp_path: Path
) -> None:
    target = tmp_path / "published"
    write_config(
        f"""
[databases]
team = {{ uri = "{target}", read_only = true }}
[databases.src]
uri = "s3://lab/src-{tmp_path.name}"
storage_options = {{ endpoint = "{s3_server}", allow_http = true, region = "us-east-1" }}
"""
    )
    assert cli("add", FIRST, "-d", "src").exit_code == 0
    assert not _publish(cli, str(target))["unchanged"]
    assert _titles(cli, "team") == [FIRST]
    assert _publish(cli, str(target))["unchanged"]


def test_an_mcp_server_searches_a_published_copy_beside_a_local_database(
    cli, target: Path, workspace
) -> None:
    import anyio
    from mcp import Client

    from haiku_cli.mcp_server.server import build_server
    from haiku_cli.mcp_server.tools import ServerScope

    _publish(cli, str(target))
    ws = workspace()

    async def search() -> dict:
        async with Client(build_server(ServerScope(ws, ws.select_many(["src", "team"]), None))) as client:
            result = await client.call_tool("search", {"query": "kestrels", "type": "fts"})
            assert not result.is_error, result.content
            return result.structured_content

    found = anyio.run(search)
    assert {h["database"] for h in found["hits"]} == {"src", "team"}
