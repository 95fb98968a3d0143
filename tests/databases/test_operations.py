"""Commands as library calls: a failed first add into a database that did not exist leaves none behind."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import ExitCode, ModelError
from haiku_cli.store import Location, exists
from tests.ingest.test_pipeline import FailingAfter


def test_an_add_src_where_every_source_fails_creates_no_database(cli, isolated: Path) -> None:
    (isolated / "empty.md").write_text("  \n")
    (isolated / "blank.txt").write_text("")
    data = isolated / "data"
    data.mkdir()
    result = cli("add-src", str(isolated / "empty.md"), str(isolated / "blank.txt"))
    assert result.exit_code == ExitCode.INPUT
    assert list(data.iterdir()) == []
    for command in ("list", "info"):
        shown = cli(command)
        assert shown.exit_code == ExitCode.DATABASE and "does not exist yet" in shown.stderr
    assert json.loads(cli("databases", "--json").stdout)[0]["exists"] is False


def test_an_add_whose_embedder_fails_creates_no_database(workspace, embedder, tmp_path: Path) -> None:
    failing = Workspace.load(embedder=FailingAfter(embedder, 0))
    location = Location("notes", str(tmp_path / "notes.lancedb"))
    with pytest.raises(ModelError):
        anyio.run(
            lambda: operations.add_text(failing, location, "Owls hunt at night.", title=None, metadata={})
        )
    assert not exists(location) and not (tmp_path / "notes.lancedb").exists()
    # The next add creates it as any first add would.
    ws = workspace()
    anyio.run(lambda: operations.add_text(ws, location, "Owls hunt at night.", title=None, metadata={}))
    assert anyio.run(lambda: operations.info(ws, location)).documents == 1


def test_a_failed_add_into_an_existing_database_keeps_it(cli, isolated: Path) -> None:
    assert cli("add", "Owls hunt at night.").exit_code == 0
    (isolated / "empty.md").write_text("")
    assert cli("add-src", str(isolated / "empty.md")).exit_code == ExitCode.INPUT
    listed = json.loads(cli("list", "--json").stdout)
    assert len(listed["documents"]) == 1


def test_a_failed_first_add_into_an_existing_empty_folder_keeps_the_folder(cli, isolated: Path) -> None:
    folder = isolated / "mine.lancedb"
    folder.mkdir()
    (isolated / "empty.md").write_text("")
    assert cli("add-src", str(isolated / "empty.md"), "--db", str(folder)).exit_code == ExitCode.INPUT
    assert folder.is_dir() and list(folder.iterdir()) == []
