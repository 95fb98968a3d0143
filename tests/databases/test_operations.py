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
from tests.ingest.support import FailingAfter


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


class _FailsWhenTold(FailingAfter):
    """An embedder that, inside the first add, waits until told and then fails like a dead server."""

    def __init__(self, real) -> None:
        super().__init__(real, 0)
        self.embedding, self.fail = anyio.Event(), anyio.Event()

    async def embed_documents(self, texts, on_progress=None):
        self.embedding.set()
        await self.fail.wait()
        return await super().embed_documents(texts, on_progress)


def test_a_second_first_add_waiting_on_a_failing_one_still_adds(workspace, embedder, tmp_path: Path) -> None:
    # The first add creates the database and fails, removing it again, while the second waits for its
    # lock: the second must create it afresh, not fail on the tables removed under it.
    failing = _FailsWhenTold(embedder)
    waiting = anyio.Event()
    location = Location("notes", str(tmp_path / "notes.lancedb"))
    first_ws = Workspace.load(embedder=failing)
    second_ws = Workspace(
        workspace().settings,
        embedder=embedder,
        on_write_wait=lambda _: anyio.from_thread.run_sync(waiting.set),
    )
    outcome: dict[str, object] = {}

    async def first() -> None:
        with pytest.raises(ModelError):
            await operations.add_text(first_ws, location, "Owls hunt at night.", title=None, metadata={})

    async def second() -> None:
        await failing.embedding.wait()  # the first add holds the lock on the database it created
        report = await operations.add_text(second_ws, location, "Swifts sleep.", title=None, metadata={})
        outcome["statuses"] = [o.status for o in report.outcomes]

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            tg.start_soon(second)
            with anyio.fail_after(60):
                await waiting.wait()
            failing.fail.set()

    anyio.run(go)
    assert outcome["statuses"] == ["added"]
    listed = anyio.run(lambda: operations.list_documents(workspace(), location))
    assert len(listed.documents) == 1
