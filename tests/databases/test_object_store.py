"""A database behind s3:// on a real S3-compatible server (moto) on 127.0.0.1, beside a local one."""

from __future__ import annotations

import json
from pathlib import Path

from haiku_cli.errors import ExitCode


def _config(write_config, endpoint: str, tmp_path: Path) -> None:
    write_config(
        f"""
[databases]
notes = "{tmp_path}/notes.lancedb"
[databases.papers]
uri = "s3://lab/papers-{tmp_path.name}.lancedb"
storage_options = {{ endpoint = "{endpoint}", allow_http = true, region = "us-east-1" }}
"""
    )


def test_create_add_search_and_fan_out_with_s3(cli, write_config, s3_server: str, tmp_path: Path) -> None:
    _config(write_config, s3_server, tmp_path)
    assert cli("add", "Kestrels hover over fields hunting voles.", "-d", "notes").exit_code == 0
    added = cli("add", "Peregrine falcons stoop at great speed onto prey.", "-d", "papers")
    assert added.exit_code == 0, added.stderr
    info = json.loads(cli("info", "-d", "papers", "--json").stdout)
    assert info["kind"] == "object store" and info["documents"] == 1 and info["size_bytes"] is None
    hits = json.loads(cli("search", "birds of prey hunting", "--json").stdout)["hits"]
    assert {h["database"] for h in hits} == {"notes", "papers"}
    only = json.loads(cli("search", "falcons", "-d", "papers", "--json").stdout)["hits"]
    assert {h["database"] for h in only} == {"papers"}
    listed = json.loads(cli("databases", "--json").stdout)
    assert [(d["database"], d["kind"], d["exists"]) for d in listed] == [
        ("notes", "local", True),
        ("papers", "object store", True),
    ]
    # The location is never printed except where asked for.
    assert "s3://" not in cli("search", "falcons").stdout


def test_unreachable_object_store_fails_naming_the_database(cli, write_config, tmp_path: Path) -> None:
    write_config(
        f"""
[databases]
notes = "{tmp_path}/notes.lancedb"
[databases.remote]
uri = "s3://lab/x.lancedb"
storage_options = {{ endpoint = "http://127.0.0.1:9", allow_http = true, region = "us-east-1" }}
"""
    )
    cli("add", "Kestrels hover.", "-d", "notes")
    result = cli("search", "kestrel")
    assert result.exit_code == ExitCode.DATABASE
    assert "database 'remote'" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""
