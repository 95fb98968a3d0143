"""Sources on object storage: `add-src s3://...` and `sync` against a real S3-compatible server (moto)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haiku_cli.errors import ExitCode
from haiku_cli.ingest.objects import ObjectStore


@pytest.fixture
def bucket(s3_server: str):
    import boto3

    return boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")


def _config(write_config, endpoint: str, tmp_path: Path, extra: str = "") -> None:
    write_config(
        f"""
[databases]
notes = "{tmp_path}/notes.lancedb"
[sources."s3://lab/"]
storage_options = {{ endpoint = "{endpoint}", allow_http = true, region = "us-east-1" }}
{extra}
"""
    )


def _put(bucket, key: str, body: str | bytes) -> None:
    bucket.put_object(Bucket="lab", Key=key, Body=body.encode() if isinstance(body, str) else body)


def _outcomes(stdout: str) -> dict[str, str]:
    return {o["source"]: o["status"] for o in json.loads(stdout)["outcomes"]}


def _uris(cli, database: str) -> set[str]:
    return {d["uri"] for d in json.loads(cli("list", "-d", database, "--json").stdout)["documents"]}


def test_add_src_reads_a_prefix_with_the_local_rules_and_sync_follows_it(
    cli, write_config, bucket, s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(write_config, s3_server, tmp_path, "[ingest]\nmax_text_mb = 0.001")
    top = f"docs-{tmp_path.name}"
    _put(bucket, f"{top}/kestrels.md", "# Kestrels\n\nKestrels hover over fields hunting voles.\n")
    _put(bucket, f"{top}/deep/falcons.txt", "Peregrine falcons stoop at great speed.\n")
    _put(bucket, f"{top}/deep/draft.md", "# Draft\n\nNot for the index.\n")
    _put(bucket, f"{top}/.hidden/secret.md", "hidden")
    _put(bucket, f"{top}/node_modules/lib.md", "a dependency")
    _put(bucket, f"{top}/photo.gif", b"GIF89a")
    _put(bucket, f"{top}/huge.txt", "owls " * 400)  # 2000 bytes, over max_text_mb
    prefix = f"s3://lab/{top}/"
    added = cli("add-src", prefix, "-d", "notes", "--exclude", "draft.md", "--json")
    assert added.exit_code == ExitCode.PARTIAL, added.stderr  # huge.txt is over the limit
    assert _outcomes(added.stdout) == {
        f"{prefix}kestrels.md": "added",
        f"{prefix}deep/falcons.txt": "added",
        f"{prefix}huge.txt": "failed",
    }
    left_out = {(e["source"], e["why"]) for e in json.loads(added.stdout)["left_out"]}
    assert left_out == {(f"{prefix}deep/draft.md", "excluded"), (f"{prefix}photo.gif", "unsupported")}
    hit = json.loads(cli("search", "hovering kestrels", "-d", "notes", "--json", "--limit", "1").stdout)
    assert hit["hits"][0]["document_uri"] == f"{prefix}kestrels.md"
    (source,) = json.loads(cli("sources", "-d", "notes", "--json").stdout)["sources"]
    assert (source["source"], source["kind"], source["documents"]) == (prefix, "folder", 2)

    # Unchanged objects are not read again (the one over the limit is refused again, unread).
    reads: list[str] = []
    real_read = ObjectStore.read
    monkeypatch.setattr(
        ObjectStore, "read", lambda self, obj, limits: reads.append(obj.uri) or real_read(self, obj, limits)
    )
    (report,) = json.loads(cli("sync", "-d", "notes", "--json").stdout)["databases"]
    assert report["sources"][0]["unchanged"] == 2
    assert [(c["source"], c["status"]) for c in report["sources"][0]["changes"]] == [
        (f"{prefix}huge.txt", "failed")
    ]
    assert reads == [f"{prefix}huge.txt"]
    reads.clear()

    _put(bucket, f"{top}/kestrels.md", "# Kestrels\n\nKestrels hover, then drop onto mice in the grass.\n")
    bucket.delete_object(Bucket="lab", Key=f"{top}/deep/falcons.txt")
    _put(bucket, f"{top}/harriers.md", "# Harriers\n\nHarriers quarter low over marshes.\n")
    done = cli("sync", "-d", "notes", "--json")
    assert done.exit_code == ExitCode.PARTIAL, done.stderr
    (report,) = json.loads(done.stdout)["databases"]
    (synced,) = report["sources"]
    changes = {(c["source"], c["status"]) for c in synced["changes"]}
    assert changes == {
        (f"{prefix}kestrels.md", "updated"),
        (f"{prefix}deep/falcons.txt", "deleted"),
        (f"{prefix}harriers.md", "added"),
        (f"{prefix}huge.txt", "failed"),
    }
    assert sorted(reads) == [f"{prefix}harriers.md", f"{prefix}huge.txt", f"{prefix}kestrels.md"]
    assert _uris(cli, "notes") == {f"{prefix}kestrels.md", f"{prefix}harriers.md"}
    mice = json.loads(cli("search", "mice in the grass", "-d", "notes", "--json", "--limit", "1").stdout)
    assert mice["hits"][0]["document_uri"] == f"{prefix}kestrels.md"


def test_an_object_uploaded_again_with_the_same_bytes_is_not_read_by_sync(
    cli, write_config, bucket, s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    _config(write_config, s3_server, tmp_path)
    top = f"etag-{tmp_path.name}"
    kestrels, owls = "# Kestrels\n\nKestrels hover over fields.\n", "# Owls\n\nOwls hunt by sound.\n"
    _put(bucket, f"{top}/kestrels.md", kestrels)
    _put(bucket, f"{top}/owls.md", owls)
    prefix = f"s3://lab/{top}/"
    assert cli("add-src", prefix, "-d", "notes").exit_code == 0
    listed = bucket.head_object(Bucket="lab", Key=f"{top}/kestrels.md")["LastModified"]
    # Both uploaded again (Last-Modified has whole seconds): kestrels with the same bytes, owls changed
    # to text of the same size, so only its ETag tells.
    while bucket.head_object(Bucket="lab", Key=f"{top}/kestrels.md")["LastModified"] == listed:
        time.sleep(0.2)
        _put(bucket, f"{top}/kestrels.md", kestrels)
        _put(bucket, f"{top}/owls.md", owls.replace("sound", "sight"))
    reads: list[str] = []
    real_read = ObjectStore.read
    monkeypatch.setattr(
        ObjectStore, "read", lambda self, obj, limits: reads.append(obj.uri) or real_read(self, obj, limits)
    )
    (report,) = json.loads(cli("sync", "-d", "notes", "--json").stdout)["databases"]
    (synced,) = report["sources"]
    assert synced["unchanged"] == 1
    assert [(c["source"], c["status"]) for c in synced["changes"]] == [(f"{prefix}owls.md", "updated")]
    assert reads == [f"{prefix}owls.md"]
    # The new Last-Modified was stored: the next sync asks nothing, not even the ETag.
    heads: list[str] = []
    monkeypatch.setattr(ObjectStore, "etag", lambda self, obj: heads.append(obj.uri))
    (report,) = json.loads(cli("sync", "-d", "notes", "--json").stdout)["databases"]
    assert report["sources"][0]["unchanged"] == 2 and heads == []


def test_a_single_object_with_the_databases_storage_options(
    cli, write_config, bucket, s3_server: str, tmp_path: Path
) -> None:
    # No [sources] entry: a database on the same store lends its endpoint and region.
    write_config(
        f"""
[databases.papers]
uri = "s3://lab/papers-{tmp_path.name}.lancedb"
storage_options = {{ endpoint = "{s3_server}", allow_http = true, region = "us-east-1" }}
"""
    )
    key = f"single-{tmp_path.name}/owls.md"
    _put(bucket, key, "# Owls\n\nBarn owls hunt by sound at night.\n")
    _put(bucket, f"single-{tmp_path.name}/other.md", "# Other\n\nNot named.\n")
    added = cli("add-src", f"s3://lab/{key}", "-d", "papers", "--json")
    assert added.exit_code == 0, added.stderr
    assert _outcomes(added.stdout) == {f"s3://lab/{key}": "added"}
    (source,) = json.loads(cli("sources", "-d", "papers", "--json").stdout)["sources"]
    assert (source["kind"], source["documents"]) == ("file", 1)
    again = cli("add-src", f"s3://lab/{key}", "-d", "papers", "--json")
    assert _outcomes(again.stdout) == {f"s3://lab/{key}": "unchanged"}


def test_a_prefix_with_no_objects_fails_and_creates_nothing(
    cli, write_config, s3_server: str, tmp_path: Path
) -> None:
    _config(write_config, s3_server, tmp_path)
    result = cli("add-src", "s3://lab/nothing-here/", "-d", "notes")
    assert result.exit_code != 0
    assert "s3://lab/nothing-here/: no such object or prefix" in result.stderr
    assert not (tmp_path / "notes.lancedb").exists()


def test_re_adding_a_prefix_names_the_objects_that_left_it(
    cli, write_config, bucket, s3_server: str, tmp_path: Path
) -> None:
    _config(write_config, s3_server, tmp_path)
    top = f"gone-{tmp_path.name}"
    _put(bucket, f"{top}/wrens.md", "# Wrens\n\nWrens sing loudly for their size.\n")
    _put(bucket, f"{top}/robins.md", "# Robins\n\nRobins defend winter territories.\n")
    assert cli("add-src", f"s3://lab/{top}", "-d", "notes").exit_code == 0
    bucket.delete_object(Bucket="lab", Key=f"{top}/robins.md")
    again = cli("add-src", f"s3://lab/{top}", "-d", "notes", "--json")
    report = json.loads(again.stdout)
    assert _outcomes(again.stdout) == {f"s3://lab/{top}/wrens.md": "unchanged"}
    assert report["gone"] == [f"s3://lab/{top}/robins.md"]  # kept until a sync


def test_add_src_reads_the_endpoint_and_region_from_the_environment_as_databases_do(
    cli, write_config, bucket, s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No [sources] entry and a local database: only AWS_ENDPOINT_URL says where the bucket is.
    write_config(f'[databases]\nnotes = "{tmp_path}/notes.lancedb"\n')
    top = f"env-{tmp_path.name}"
    _put(bucket, f"{top}/herons.md", "# Herons\n\nGrey herons stand still in shallow water.\n")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    added = cli("add-src", f"s3://lab/{top}/", "-d", "notes", "--json")
    assert added.exit_code == 0, added.stderr
    assert _outcomes(added.stdout) == {f"s3://lab/{top}/herons.md": "added"}
    (report,) = json.loads(cli("sync", "-d", "notes", "--json").stdout)["databases"]
    assert report["sources"][0]["unchanged"] == 1
