"""`haiku serve --sync-before-search`: a question's searches first sync the sources whose files changed;
without it, the model is told the passage's source changed and the citation says so."""

from __future__ import annotations

from pathlib import Path

import anyio

from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.web.app import WebApp
from tests.capabilities.analysis_script import cite_printed
from tests.capabilities.script import call, cite_first, returns, search, text
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


_PROGRAM = (
    'hit = search("herons wading")[0]\n'
    'print(hit["source_state"], hit["content"].strip(), hit["chunk_id"])\n'
    'print([d["title"] for d in list_documents()])\n'
)


def _run_program(ws: Workspace, *, sync: bool) -> str:
    """`haiku serve --analysis`: one question whose model runs a program calling the sandbox's search();
    what execute_code returned to the model."""
    ws.sync_before_search = sync
    script = StreamScript(
        call(("load_capability", {"id": "analysis"})),
        call(("execute_code", {"code": _PROGRAM})),
        cite_printed(),
        text("Herons wade at the hour the program printed [1]."),
    )
    app = anyio.run(lambda: WebApp.open(ws, ws.select_many(), script.model, analysis=True))
    found = events(request(app, "POST", "/api/agui", json=run_input([question("When do herons wade?")])))
    assert not of_type(found, "RUN_ERROR")
    [output] = returns(script.seen[2], "execute_code")
    return output


def test_with_the_option_the_sandboxs_search_syncs_first_too(tmp_path: Path, write_config, workspace) -> None:
    ws = _edited_after_indexing(tmp_path, write_config, workspace)
    output = _run_program(ws, sync=True)
    assert "fresh Herons wade at dusk in the shallows." in output
    said = f"[haiku] Before a search() of this program: synced {tmp_path / 'heron.txt'} [notes]: 1 updated."
    assert said in output
    again = _run_program(ws, sync=True)  # nothing changed since: nothing synced, nothing said
    assert "fresh Herons wade at dusk" in again and "Before a search()" not in again


def test_without_it_the_sandboxs_search_reads_the_old_text_marked_changed(
    tmp_path: Path, write_config, workspace
) -> None:
    ws = _edited_after_indexing(tmp_path, write_config, workspace)
    output = _run_program(ws, sync=False)
    assert "changed Herons wade at dawn in the shallows." in output and "Before a search()" not in output


def test_a_program_reads_the_text_a_sync_before_its_search_wrote(
    tmp_path: Path, write_config, workspace
) -> None:
    folder = tmp_path / "birds"
    folder.mkdir()
    for name in ("a-heron", "b-egret"):
        (folder / f"{name}.txt").write_text(f"The {name} wades at dawn.\n", encoding="utf-8")
    write_config(f'[databases]\nnotes = "{tmp_path / "notes.lancedb"}"\n')
    ws = workspace()
    anyio.run(lambda: operations.add_sources(ws, ws.lookup("notes"), [str(folder)], title=None, metadata={}))
    (folder / "b-egret.txt").write_text("The b-egret now wades at dusk.\n", encoding="utf-8")
    ws.sync_before_search = True
    # Reading the first document's text reads the next one's ahead; the search then syncs the second.
    program = (
        "docs = sorted(list_documents(), key=lambda d: d['title'])\n"
        "first = open(docs[0]['path'] + 'content.txt').read()\n"
        "hit = search('wades')[0]\n"
        "print(open(docs[1]['path'] + 'content.txt').read().strip(), hit['chunk_id'])\n"
    )
    script = StreamScript(
        call(("load_capability", {"id": "analysis"})),
        call(("execute_code", {"code": program})),
        cite_printed(),
        text("The egret wades at dusk [1]."),
    )
    app = anyio.run(lambda: WebApp.open(ws, ws.select_many(), script.model, analysis=True))
    events(request(app, "POST", "/api/agui", json=run_input([question("When does the egret wade?")])))
    [output] = returns(script.seen[2], "execute_code")
    assert "The b-egret now wades at dusk." in output
    assert f"synced {folder} [notes]: 1 updated" in output
