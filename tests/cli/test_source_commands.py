"""`haiku sources`, `forget-src` and `sync` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from haiku_cli.errors import ExitCode
from tests.support.permissions import without_root_powers


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "apples.md").write_text("# Apples\n\nApples grow in orchards.\n")
    (folder / "pears.md").write_text("# Pears\n\nPears ripen off the tree.\n")
    return folder


def _uris(cli) -> set[str]:
    return {d["uri"] for d in json.loads(cli("list", "--json").stdout)["documents"]}


def test_sources_lists_what_add_src_remembered(cli, notes: Path) -> None:
    assert cli("add-src", str(notes), "--meta", "topic=fruit", "--exclude", "drafts/").exit_code == 0
    listed = json.loads(cli("sources", "--json").stdout)
    assert listed["database"] == "default"
    (source,) = listed["sources"]
    assert (source["source"], source["kind"], source["documents"]) == (str(notes), "folder", 2)
    assert source["metadata"] == {"topic": "fruit"} and source["follow_symlinks"] is False
    shown = cli("sources")
    assert str(notes) in shown.stdout and "--meta topic=fruit --exclude drafts/" in shown.stdout


def test_sync_follows_the_folder_and_reports_counts(cli, notes: Path) -> None:
    cli("add-src", str(notes), "--meta", "topic=fruit")
    (notes / "pears.md").unlink()
    (notes / "plums.md").write_text("# Plums\n\nPlums are stone fruit.\n")
    done = cli("sync")
    assert done.exit_code == 0, done.stderr
    assert f"added     {notes / 'plums.md'}" in done.stdout
    assert f"deleted   {notes / 'pears.md'}" in done.stdout
    assert "default: 1 source; 1 added, 1 deleted, 1 unchanged" in done.stderr
    assert _uris(cli) == {(notes / "apples.md").as_uri(), (notes / "plums.md").as_uri()}
    (notes / "plums.md").rename(notes / "stone-fruit.md")
    moved = cli("sync")
    assert f"updated   {notes / 'stone-fruit.md'} → " in moved.stdout
    assert f"(moved from {notes / 'plums.md'})" in moved.stdout
    plums = json.loads(cli("search", "stone fruit", "--json", "--limit", "1").stdout)["hits"][0]
    assert plums["metadata"] == {"topic": "fruit"}  # the remembered --meta applies
    again = json.loads(cli("sync", "--json").stdout)
    (report,) = again["databases"]
    (source,) = report["sources"]
    assert (source["unchanged"], source["changes"], source["status"]) == (2, [], "synced")


def test_a_vanished_source_is_reported_kept_and_exits_partial(cli, notes: Path, tmp_path: Path) -> None:
    cli("add-src", str(notes))
    notes.rename(tmp_path / "elsewhere")
    done = cli("sync")
    assert done.exit_code == ExitCode.PARTIAL
    assert f"{notes}: no such file or directory; its 2 documents are kept" in done.stderr
    assert len(_uris(cli)) == 2


def test_a_source_folder_that_became_unreadable_is_reported_kept_and_exits_partial(cli, notes: Path) -> None:
    cli("add-src", str(notes))
    notes.chmod(0)
    try:
        run = subprocess.run(
            [*without_root_powers(), sys.executable, "-m", "haiku_cli", "sync"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        notes.chmod(0o755)
    assert run.returncode == ExitCode.PARTIAL, run.stderr
    assert f"{notes}: cannot read (Permission denied); its 2 documents are kept" in run.stderr
    assert "Traceback" not in run.stderr
    assert len(_uris(cli)) == 2  # nothing deleted while the folder could not be read
    back = cli("sync")
    assert back.exit_code == 0 and "1 source; 2 unchanged" in back.stderr


def test_forget_src_deletes_or_keeps_documents(cli, notes: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.md"
    other.write_text("Other notes.\n")
    cli("add-src", str(notes))
    cli("add-src", str(other))
    kept = cli("forget-src", str(other), "--keep-documents", "--json")
    assert json.loads(kept.stdout)["kept_documents"] == 1
    assert len(_uris(cli)) == 3
    gone = cli("forget-src", str(notes))
    assert gone.exit_code == 0 and "2 documents deleted" in gone.stdout
    assert _uris(cli) == {other.as_uri()}
    assert json.loads(cli("sources", "--json").stdout)["sources"] == []
    unknown = cli("forget-src", str(notes))
    assert unknown.exit_code == ExitCode.INPUT
    assert f"remembers no source {notes}; haiku sources lists them" in unknown.stderr


def test_sync_all_covers_every_writable_database(cli, write_config, tmp_path: Path, notes: Path) -> None:
    write_config(
        f'[databases]\none = "{tmp_path / "one.lancedb"}"\n'
        f'two = {{ uri = "{tmp_path / "two.lancedb"}", read_only = false }}\n'
        f'ro = {{ uri = "{tmp_path / "ro.lancedb"}", read_only = true }}\n'
    )
    cli("add-src", str(notes / "apples.md"), "-d", "one")
    cli("add-src", str(notes / "pears.md"), "-d", "two")
    (notes / "apples.md").write_text("# Apples\n\nApples are crisp.\n")
    done = json.loads(cli("sync", "--all", "--json").stdout)
    assert [r["database"] for r in done["databases"]] == ["one", "two"]
    assert [r["sources"][0]["updated"] for r in done["databases"]] == [1, 0]
    refused = cli("sync", "--all", "-d", "one")
    assert refused.exit_code == ExitCode.USAGE and "--all covers every configured database" in refused.stderr
    several = cli("sync")
    assert several.exit_code == ExitCode.INPUT and several.stderr.count("\n") == 1
    assert several.stderr.rstrip().endswith("or --all for every one that is not read_only")


def test_sync_all_with_no_database_to_sync_says_so(cli) -> None:
    done = cli("sync", "--all")
    assert done.exit_code == ExitCode.INPUT
    assert "--all found no configured database that exists and is not read_only" in done.stderr


def test_a_database_without_remembered_sources(cli) -> None:
    cli("add", "A note typed in, not added from a source.")
    listed = cli("sources")
    assert listed.exit_code == 0 and "no remembered sources" in listed.stdout
    done = cli("sync")
    assert done.exit_code == 0 and "default: no remembered sources; nothing changed" in done.stderr


def test_sources_and_sync_on_an_object_store_database(
    cli, write_config, s3_server: str, tmp_path: Path, notes: Path
) -> None:
    write_config(
        f"""
[databases.papers]
uri = "s3://lab/synced-{tmp_path.name}.lancedb"
storage_options = {{ endpoint = "{s3_server}", allow_http = true, region = "us-east-1" }}
"""
    )
    added = cli("add-src", str(notes))
    assert added.exit_code == 0, added.stderr
    (notes / "pears.md").unlink()
    (notes / "plums.md").write_text("# Plums\n\nPlums are stone fruit.\n")
    done = json.loads(cli("sync", "--json").stdout)
    (source,) = done["databases"][0]["sources"]
    assert (source["added"], source["deleted"], source["unchanged"]) == (1, 1, 1)
    listed = json.loads(cli("sources", "--json").stdout)
    assert [(s["source"], s["documents"]) for s in listed["sources"]] == [(str(notes), 2)]
    assert _uris(cli) == {(notes / "apples.md").as_uri(), (notes / "plums.md").as_uri()}
