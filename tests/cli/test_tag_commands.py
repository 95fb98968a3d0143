"""`haiku tag` and `--at TAG`: a named state of each database, read back as it was, kept by every cleanup."""

from __future__ import annotations

import json
from pathlib import Path

import lancedb
import pytest

from haiku_cli.errors import ExitCode


def _two(write_config, tmp_path: Path) -> None:
    write_config(f'[databases]\nbirds = "{tmp_path}/birds.lancedb"\nrivers = "{tmp_path}/rivers.lancedb"\n')


def _titles(cli, *args: str) -> set[str]:
    result = cli("list", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return {d["title"] for d in json.loads(result.stdout)["documents"]}


def _hits(cli, query: str, *args: str) -> set[tuple[str, str]]:
    result = cli("search", query, "--json", *args)
    assert result.exit_code == 0, result.stderr
    return {(h["database"], h["document_title"]) for h in json.loads(result.stdout)["hits"]}


def test_a_tag_of_the_set_is_read_back_as_it_was(cli, write_config, tmp_path: Path) -> None:
    _two(write_config, tmp_path)
    cli("add", "Kestrels hover over fields hunting voles.", "--title", "Kestrels", "-d", "birds")
    cli("add", "Otters swim in cold rivers.", "--title", "Otters", "-d", "rivers")
    made = cli("tag", "create", "before", "--all", "--json")
    assert made.exit_code == 0, made.stderr
    assert [m["database"] for m in json.loads(made.stdout)] == ["birds", "rivers"]
    kestrel = json.loads(cli("list", "--json", "-d", "birds").stdout)["documents"][0]["id"]
    cli("add", "Falcons stoop onto prey.", "--title", "Falcons", "-d", "birds")
    cli("add", "Salmon swim upstream in rivers.", "--title", "Salmon", "-d", "rivers")
    assert cli("delete", kestrel, "-d", "birds").exit_code == 0

    assert _hits(cli, "animals", "--at", "before") == {("birds", "Kestrels"), ("rivers", "Otters")}
    assert _hits(cli, "animals") == {("birds", "Falcons"), ("rivers", "Otters"), ("rivers", "Salmon")}
    assert _titles(cli, "-d", "birds", "--at", "before") == {"Kestrels"}
    got = cli("get", kestrel, "-d", "birds", "--at", "before", "--json")
    assert got.exit_code == 0 and "voles" in json.loads(got.stdout)["document"]["content"]
    assert cli("get", kestrel, "-d", "birds").exit_code != 0  # deleted since
    listed = json.loads(cli("tag", "list", "-d", "rivers", "--json").stdout)
    assert [t["name"] for t in listed["tags"]] == ["before"]
    assert set(listed["tags"][0]["versions"]) >= {"documents", "chunks", "meta"}


def test_a_database_without_the_tag_is_named_and_nothing_is_read(cli, write_config, tmp_path: Path) -> None:
    _two(write_config, tmp_path)
    cli("add", "Kestrels hover.", "-d", "birds")
    cli("add", "Otters swim.", "-d", "rivers")
    assert cli("tag", "create", "only-birds", "-d", "birds").exit_code == 0
    result = cli("search", "animals", "--at", "only-birds")
    assert result.exit_code == ExitCode.DATABASE and result.stdout == ""
    assert "rivers" in result.stderr and "only-birds" in result.stderr and "'birds'" not in result.stderr
    assert cli("search", "animals", "--at", "only-birds", "-d", "birds").exit_code == 0
    bad = cli("search", "animals", "--at", "no such")
    assert bad.exit_code == ExitCode.INPUT and "tag name" in bad.stderr


def test_tag_all_is_all_or_nothing(cli, write_config, tmp_path: Path) -> None:
    _two(write_config, tmp_path)
    cli("add", "Kestrels hover.", "-d", "birds")
    cli("add", "Otters swim.", "-d", "rivers")
    assert cli("tag", "create", "v1", "-d", "rivers").exit_code == 0
    again = cli("tag", "create", "v1", "--all")
    assert again.exit_code == ExitCode.INPUT and "rivers" in again.stderr
    assert json.loads(cli("tag", "list", "-d", "birds", "--json").stdout)["tags"] == []


def test_vacuum_and_the_automatic_cleanup_keep_tagged_versions(cli, tmp_path: Path) -> None:
    cli("add", "Kestrels hover over fields.", "--title", "Kestrels")
    assert cli("tag", "create", "kept").exit_code == 0
    # More writes than the automatic cleanup keeps versions of (MAX_VERSIONS), then a vacuum.
    for n in range(12):
        cli("add", f"Note {n} about herons wading.", "--title", f"Heron {n}")
    first = json.loads(cli("list", "--json").stdout)["documents"][0]["id"]
    cli("delete", first)
    vacuumed = cli("vacuum")
    assert vacuumed.exit_code == 0, vacuumed.stderr
    assert _titles(cli, "--at", "kept") == {"Kestrels"}
    assert _hits(cli, "kestrels", "--at", "kept") == {("default", "Kestrels")}
    # Deleting the tag lets the next vacuum remove what only it kept.
    assert cli("tag", "delete", "kept").exit_code == 0
    assert cli("vacuum").exit_code == 0
    table = lancedb.connect(str(tmp_path / "data" / "default.lancedb")).open_table("documents")
    assert len(table.list_versions()) == 1 and table.tags.list() == {}
    assert cli("list", "--at", "kept").exit_code == ExitCode.DATABASE


def test_restore_asks_then_puts_the_tagged_state_back(cli, tmp_path: Path) -> None:
    cli("add", "Kestrels hover over fields.", "--title", "Kestrels")
    cli("tag", "create", "good")
    kestrel = json.loads(cli("list", "--json").stdout)["documents"][0]["id"]
    cli("add", "Spam spam spam.", "--title", "Spam")
    cli("delete", kestrel)
    refused = cli("tag", "restore", "good")  # not a terminal: asks for --yes rather than guess
    assert refused.exit_code == ExitCode.INPUT and "--yes" in refused.stderr
    assert _titles(cli) == {"Spam"}
    declined = cli("tag", "restore", "good", input="n\n")
    assert _titles(cli) == {"Spam"} and declined.exit_code != 0
    done = cli("tag", "restore", "good", "--yes", "--json")
    assert done.exit_code == 0, done.stderr
    assert _titles(cli) == {"Kestrels"}
    assert _hits(cli, "kestrels hovering") == {("default", "Kestrels")}
    assert cli("get", kestrel).exit_code == 0
    assert json.loads(cli("history", "--json").stdout)["writes"][0]["operation"] == "tag restore good"
    # The tag is still there, and writing goes on from the restored state.
    assert cli("add", "Owls hunt at night.", "--title", "Owls").exit_code == 0
    assert _titles(cli) == {"Kestrels", "Owls"} and _titles(cli, "--at", "good") == {"Kestrels"}


def test_a_tag_outlives_a_rebuild(cli, tmp_path: Path) -> None:
    cli("add", "Kestrels hover over fields.", "--title", "Kestrels")
    cli("tag", "create", "old")
    cli("add", "Owls hunt at night.", "--title", "Owls")
    assert cli("rebuild").exit_code == 0
    assert _hits(cli, "birds", "--at", "old") == {("default", "Kestrels")}
    assert cli("tag", "restore", "old", "--yes").exit_code == 0
    assert _hits(cli, "birds") == {("default", "Kestrels")}
    assert cli("tag", "delete", "old").exit_code == 0
    names = set(lancedb.connect(str(tmp_path / "data" / "default.lancedb")).list_tables().tables)
    assert len([n for n in names if n.startswith("chunks")]) == 1


def test_names_and_duplicates_are_refused(cli) -> None:
    cli("add", "Kestrels hover.")
    assert cli("tag", "create", "a/b").exit_code == ExitCode.INPUT
    assert cli("tag", "create", "v1").exit_code == 0
    twice = cli("tag", "create", "v1")
    assert twice.exit_code == ExitCode.INPUT and "already has a tag 'v1'" in twice.stderr
    missing = cli("tag", "delete", "v2")
    assert missing.exit_code == ExitCode.DATABASE and "(its tags: v1)" in missing.stderr


def test_restoring_a_tag_or_database_that_is_not_there_says_so_before_asking(cli, tmp_path: Path) -> None:
    gone = cli("tag", "restore", "good", "--db", str(tmp_path / "nowhere.lancedb"))
    assert gone.exit_code == ExitCode.DATABASE and "--yes" not in gone.stderr
    assert "nowhere.lancedb" in gone.stderr and gone.stderr.count("\n") == 1
    cli("add", "Kestrels hover.")
    untagged = cli("tag", "restore", "good")
    assert untagged.exit_code == ExitCode.DATABASE and "--yes" not in untagged.stderr
    assert "has no tag 'good' (its tags: none)" in untagged.stderr
    # The same code and words as reading at a tag the database lacks.
    at = cli("list", "--at", "good")
    assert at.exit_code == ExitCode.DATABASE and "has no tag 'good' (its tags: none)" in at.stderr


def test_tags_on_object_storage(cli, write_config, s3_server: str, tmp_path: Path) -> None:
    write_config(
        f"""
[databases.papers]
uri = "s3://lab/tags-{tmp_path.name}.lancedb"
storage_options = {{ endpoint = "{s3_server}", allow_http = true, region = "us-east-1" }}
"""
    )
    cli("add", "Peregrine falcons stoop onto prey.", "--title", "Falcons")
    assert cli("tag", "create", "t").exit_code == 0
    cli("add", "Herons wade in shallow water.", "--title", "Herons")
    assert cli("vacuum").exit_code == 0
    assert _titles(cli, "--at", "t") == {"Falcons"}
    assert cli("tag", "restore", "t", "--yes").exit_code == 0
    assert _titles(cli) == {"Falcons"}


def test_a_workspace_read_at_a_tag_refuses_every_write(workspace, tmp_path: Path) -> None:
    import anyio
    import pytest

    from haiku_cli import api

    ws = workspace()
    (loc,) = ws.locations.values()
    anyio.run(lambda: api.add_text(ws, loc, "Kestrels hover.", title="Kestrels", metadata={}))
    anyio.run(lambda: api.create_tag(ws, loc, "t"))
    ws.read_at("t")
    with pytest.raises(api.DatabaseError, match="read at tag 't'"):
        anyio.run(lambda: api.add_text(ws, loc, "Owls hunt.", title="Owls", metadata={}))
    assert [d.title for d in anyio.run(lambda: api.list_documents(ws, loc)).documents] == ["Kestrels"]


def _killed_restore(tmp_path: Path, point: str) -> None:
    """`haiku tag restore old --yes` in a process of its own, killed when it reaches `point`."""
    import os
    import signal
    import subprocess
    import sys
    import time

    gate = tmp_path / f"gate-{point}"
    gate.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2]), "HAIKU_TEST_PAUSE": f"{point}:{gate}"}
    command = [sys.executable, "-m", "haiku_cli", "tag", "restore", "old", "--yes"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not any(gate.glob(f"{point}.*.reached")):
        assert proc.poll() is None and time.monotonic() < deadline, f"the restore never reached {point}"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


def _rebuilt_since_the_tag(cli) -> None:
    cli("add", "Kestrels hover over fields.", "--title", "Kestrels")
    assert cli("tag", "create", "old").exit_code == 0
    cli("add", "Owls hunt at night.", "--title", "Owls")
    assert cli("rebuild").exit_code == 0


@pytest.mark.parametrize("point", ["journal-written", "before-commit"])
def test_a_restore_across_a_rebuild_killed_before_its_commit_is_undone(
    cli, tmp_path: Path, point: str
) -> None:
    _rebuilt_since_the_tag(cli)
    # Killed with every step done but the commit that removes its journal and makes the tag's chunks
    # table live (or before any step): as without a rebuild between, the restore is all or nothing.
    _killed_restore(tmp_path, point)
    assert _titles(cli) == {"Kestrels", "Owls"}  # a reader while the journal is pending: the state before
    assert _hits(cli, "birds") == {("default", "Kestrels"), ("default", "Owls")}
    assert cli("add", "Herons wade.", "--title", "Herons").exit_code == 0  # a writer undoes the restore
    assert _titles(cli) == {"Kestrels", "Owls", "Herons"}
    doctor = cli("doctor", "--json")
    assert doctor.exit_code == 0 and json.loads(doctor.stdout)["ok"], doctor.stdout
    assert cli("tag", "restore", "old", "--yes").exit_code == 0  # and the restore, run again, is whole
    assert _titles(cli) == {"Kestrels"} and _hits(cli, "birds") == {("default", "Kestrels")}


def test_a_restore_killed_before_dropping_the_replaced_chunks_leaves_it_to_vacuum(
    cli, tmp_path: Path
) -> None:
    _rebuilt_since_the_tag(cli)
    _killed_restore(tmp_path, "tag-restored")
    conn = lancedb.connect(str(tmp_path / "data" / "default.lancedb"))
    chunk_tables = lambda: [n for n in conn.list_tables().tables if n.startswith("chunks")]  # noqa: E731
    assert len(chunk_tables()) == 2  # the tag's, live again, and the rebuilt one nothing reads
    assert _titles(cli) == {"Kestrels"}
    assert cli("vacuum").exit_code == 0
    assert len(chunk_tables()) == 1 and _hits(cli, "birds") == {("default", "Kestrels")}
