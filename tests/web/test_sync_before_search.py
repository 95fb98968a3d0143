"""`haiku serve --sync-before-search`: a question's searches first sync the sources whose files changed;
without it, the model is told the passage's source changed and the citation says so."""

from __future__ import annotations

from pathlib import Path

import anyio

from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.web.app import WebApp
from tests.capabilities.script import cite_first, returns, search, text
from tests.chat.streaming import StreamScript
from tests.web.test_app import events, of_type, question, request, run_input


def _edited_after_indexing(tmp_path: Path, write_config, workspace) -> Workspace:
    path = tmp_path / "heron.txt"
    path.write_text("Herons wade at dawn in the shallows.\n", encoding="utf-8")
    write_config(f'[databases]\nnotes = "{tmp_path / "notes.lancedb"}"\n')
    ws = workspace()
    anyio.run(lambda: operations.add_sources(ws, ws.lookup("notes"), [str(path)], title=None, metadata={}))
    path.write_text("Herons wade at dusk in the shallows.\n", encoding="utf-8")
    return ws


def _ask(ws: Workspace, *, sync: bool) -> tuple[str, dict]:
    """One question through the app's AG-UI endpoint: what its search returned to the model, and the
    citation the page was sent."""
    ws.sync_before_search = sync
    script = StreamScript(search("herons wading"), cite_first(), text("Herons wade [1]."))
    app = anyio.run(lambda: WebApp.open(ws, ws.select_many(), script.model))
    found = events(request(app, "POST", "/api/agui", json=run_input([question("When do herons wade?")])))
    [custom] = of_type(found, "CUSTOM")
    [citation] = custom["value"]["citations"]
    [searched] = returns(script.seen[1], "search")
    return searched, citation


def test_with_the_option_a_question_searches_the_synced_text(tmp_path: Path, write_config, workspace) -> None:
    ws = _edited_after_indexing(tmp_path, write_config, workspace)
    searched, citation = _ask(ws, sync=True)
    assert searched.startswith(f"Before this search: synced {tmp_path / 'heron.txt'} [notes]: 1 updated.")
    assert "dusk" in searched and "stale" not in searched
    assert citation["source_state"] == "fresh" and "dusk" in citation["content"]


def test_without_it_the_old_text_is_cited_marked_changed(tmp_path: Path, write_config, workspace) -> None:
    ws = _edited_after_indexing(tmp_path, write_config, workspace)
    searched, citation = _ask(ws, sync=False)
    assert "dawn" in searched and "[stale: the source changed since this text was indexed" in searched
    assert citation["source_state"] == "changed" and "dawn" in citation["content"]
