"""`haiku mcp --sync-before-search`: a search through the server first syncs the sources whose files
changed; without it, the server never writes and each hit says its source changed, looked at each time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.mcp_server.server import build_server
from haiku_cli.mcp_server.tools import ServerScope


def _corpus(tmp_path: Path, write_config, workspace) -> tuple[Workspace, Path, Path]:
    """`one` holding kept.txt and `ro` (read_only) holding shared.txt, both files edited since."""
    one, ro = tmp_path / "one.lancedb", tmp_path / "ro.lancedb"
    write_config(f'[databases]\none = "{one}"\nro = "{ro}"\n')
    kept, shared = tmp_path / "kept.txt", tmp_path / "shared.txt"
    kept.write_text("Herons wade at dawn.\n", encoding="utf-8")
    shared.write_text("Herons nest in reeds.\n", encoding="utf-8")
    ws = workspace()

    async def fill() -> None:
        for name, path in (("one", kept), ("ro", shared)):
            await operations.add_sources(ws, ws.lookup(name), [str(path)], title=None, metadata={})

    anyio.run(fill)
    write_config(f'[databases]\none = "{one}"\nro = {{ uri = "{ro}", read_only = true }}\n')
    kept.write_text("Herons wade at dusk now.\n", encoding="utf-8")
    shared.write_text("Herons left the reeds.\n", encoding="utf-8")
    return workspace(), kept, shared


def _server(ws: Workspace, *, sync: bool) -> ServerScope:
    ws.sync_before_search = sync
    return ServerScope(ws, ws.select_many())


def _searches(scope: ServerScope, times: int = 1, *, at_once: bool = False) -> list[dict[str, Any]]:
    """Search "herons" through one MCP client session, one call after another or all at once."""

    async def go() -> list[dict[str, Any]]:
        results: list[Any] = [None] * times
        async with Client(build_server(scope)) as client:

            async def one(i: int) -> None:
                results[i] = await client.call_tool("search", {"query": "herons", "type": "fts"})

            if at_once:
                async with anyio.create_task_group() as tg:
                    for i in range(times):
                        tg.start_soon(one, i)
            else:
                for i in range(times):
                    await one(i)
        assert not any(r.is_error for r in results), [r.content for r in results]
        return [r.structured_content for r in results]

    return anyio.run(go)


def _by_database(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {h["database"]: h for h in result["hits"]}


def test_with_the_option_a_search_first_syncs_what_changed_and_leaves_read_only_alone(
    tmp_path: Path, write_config, workspace
) -> None:
    ws, kept, _ = _corpus(tmp_path, write_config, workspace)
    first, again = _searches(_server(ws, sync=True), 2)
    hits = _by_database(first)
    assert hits["one"]["source_state"] == "fresh" and "dusk" in hits["one"]["content"]
    assert hits["ro"]["source_state"] == "changed" and "reeds" in hits["ro"]["content"]
    assert first["notes"] == [
        f"synced {kept} [one]: 1 updated",
        "ro is read_only: searched as it is, not synced",
    ]
    assert again["notes"] == ["ro is read_only: searched as it is, not synced"]  # nothing left to sync


def test_without_the_option_the_server_writes_nothing_and_says_the_hit_changed(
    tmp_path: Path, write_config, workspace
) -> None:
    ws, _, _ = _corpus(tmp_path, write_config, workspace)
    (result,) = _searches(_server(ws, sync=False))
    hits = _by_database(result)
    assert hits["one"]["source_state"] == "changed" and "dawn" in hits["one"]["content"]
    assert result["notes"] == []
    (listed,) = anyio.run(lambda: operations.list_sources(ws, ws.lookup("one"))).sources
    assert listed.changed == 1  # still as it was indexed: the server did not sync it


def test_two_searches_at_once_sync_a_database_once(tmp_path: Path, write_config, workspace) -> None:
    ws, kept, _ = _corpus(tmp_path, write_config, workspace)
    results = _searches(_server(ws, sync=True), 2, at_once=True)
    for result in results:  # the second waited for the first's sync, then searched what it wrote
        hit = _by_database(result)["one"]
        assert hit["source_state"] == "fresh" and "dusk" in hit["content"]
    synced = [n for r in results for n in r["notes"] if n.startswith("synced")]
    assert synced == [f"synced {kept} [one]: 1 updated"]
    history = anyio.run(lambda: operations.history(ws, ws.lookup("one")))
    assert sum(1 for write in history.writes if write.operation.startswith("sync")) == 1


def test_the_search_tool_says_it_may_write_only_when_started_so(
    tmp_path: Path, write_config, workspace
) -> None:
    ws, _, _ = _corpus(tmp_path, write_config, workspace)

    async def hints(scope: ServerScope) -> bool:
        async with Client(build_server(scope)) as client:
            (tool,) = [t for t in (await client.list_tools()).tools if t.name == "search"]
            return tool.annotations.read_only_hint

    assert anyio.run(hints, _server(ws, sync=False)) is True
    assert anyio.run(hints, _server(ws, sync=True)) is False


def test_a_long_lived_server_says_changed_as_soon_as_the_file_is_edited(
    tmp_path: Path, write_config, workspace
) -> None:
    path = tmp_path / "heron.txt"
    path.write_text("Herons wade at dawn.\n", encoding="utf-8")
    write_config(f'[databases]\nnotes = "{tmp_path / "notes.lancedb"}"\n')
    ws = workspace()
    anyio.run(lambda: operations.add_sources(ws, ws.lookup("notes"), [str(path)], title=None, metadata={}))
    scope = _server(ws, sync=False)

    async def go() -> list[str]:
        seen = []
        async with Client(build_server(scope)) as client:
            for edit in (None, "Herons wade at dusk.\n", "Herons wade at dawn.\n"):
                if edit is not None:
                    path.write_text(edit, encoding="utf-8")
                result = await client.call_tool("search", {"query": "herons", "type": "fts"})
                (hit,) = result.structured_content["hits"]
                seen.append(hit["source_state"])
        return seen

    # Back as it was indexed is fresh again: each search looked at the file, none kept an answer.
    assert anyio.run(go) == ["fresh", "changed", "fresh"]


def test_the_option_or_its_config_key_cannot_serve_a_tag(cli, write_config) -> None:
    refused = cli("mcp", "--sync-before-search", "--at", "v1")
    assert refused.exit_code == 2 and "cannot serve a tag (--at)" in refused.stderr
    write_config("[mcp]\nsync_before_search = true\n")
    refused = cli("mcp", "--at", "v1")
    assert refused.exit_code == 2 and "[mcp] sync_before_search" in refused.stderr


def test_a_note_dropped_into_a_remembered_folder_is_found_by_the_servers_next_search(
    tmp_path: Path, write_config, workspace
) -> None:
    one, notes = tmp_path / "one.lancedb", tmp_path / "notes"
    write_config(f'[databases]\none = "{one}"\n')
    notes.mkdir()
    (notes / "kept.md").write_text("Herons wade at dawn.\n", encoding="utf-8")
    ws = workspace()
    anyio.run(lambda: operations.add_sources(ws, ws.lookup("one"), [str(notes)], title=None, metadata={}))
    scope = _server(workspace(), sync=True)
    steps = [
        lambda: None,
        lambda: (notes / "fresh.md").write_text("Herons fish in the fog.\n", encoding="utf-8"),
        lambda: (notes / "fresh.md").unlink(),
    ]

    async def go() -> list[tuple[set[str], list[str]]]:
        found = []
        async with Client(build_server(scope)) as client:  # one session: the server keeps its handles
            for step in steps:
                step()
                done = await client.call_tool("search", {"query": "herons", "type": "fts"})
                result = done.structured_content
                found.append(({Path(h["document_uri"]).name for h in result["hits"]}, result["notes"]))
        return found

    first, added, removed = anyio.run(go)
    assert first == ({"kept.md"}, [])
    assert added == ({"kept.md", "fresh.md"}, [f"synced {notes} [one]: 1 added"])
    assert removed == ({"kept.md"}, [f"synced {notes} [one]: 1 deleted"])
