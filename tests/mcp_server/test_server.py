"""The MCP tools through the SDK's own client, in process: scope, narrowing, refusals and tool errors."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from haiku_cli import api
from haiku_cli.databases.selection import Selection
from haiku_cli.mcp_server.server import build_server
from haiku_cli.mcp_server.tools import ServerScope
from haiku_cli.store import maintenance
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import open_database
from haiku_cli.store.location import Location
from tests.capabilities.analysis_script import cite_printed, execute
from tests.capabilities.script import Script, text
from tests.support.single_chunks import single_chunk_database

READ_TOOLS = {"list_databases", "search", "get_document", "get_pictures", "list_documents"}


@asynccontextmanager
async def connected(scope: ServerScope) -> AsyncIterator[Client]:
    async with Client(build_server(scope)) as client:
        yield client


def call(scope: ServerScope, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Call tools in order over one connection; results as the client received them."""

    async def go() -> list[Any]:
        async with connected(scope) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    (block,) = result.content
    return block.text


def hits(result: Any) -> list[dict[str, Any]]:
    assert not result.is_error, result.content
    return result.structured_content["hits"]


def test_tools_offered_are_the_read_tools_without_a_model(scope) -> None:
    async def go() -> list[Any]:
        async with connected(scope()) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(go)
    assert {t.name for t in tools} == READ_TOOLS
    assert all(t.annotations.read_only_hint and not t.annotations.destructive_hint for t in tools)


def test_ask_and_analyze_are_offered_when_a_model_is_configured(scope) -> None:
    async def go() -> set[str]:
        async with connected(scope(model="openai-chat:test")) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert anyio.run(go) == READ_TOOLS | {"ask", "analyze"}


def test_search_covers_the_selection_and_labels_every_hit(scope) -> None:
    served = scope()
    (result,) = call(served, ("search", {"query": "tides", "type": "fts"}))
    assert {h["database"] for h in hits(result)} == {
        "alpha",
        "beta",
    }  # gamma matches too, but is out of scope
    assert result.structured_content["databases"] == ["alpha", "beta"]
    # The same model `haiku search --json` prints.
    direct = anyio.run(lambda: api.search(served.ws, served.selection, "tides", search_type="fts"))
    assert result.structured_content == direct.model_dump(mode="json")


def test_databases_narrow_the_scope(scope) -> None:
    (result,) = call(scope(), ("search", {"query": "tides", "databases": ["beta"], "type": "fts"}))
    assert [h["document_title"] for h in hits(result)] == ["Tide pools"]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("search", {"query": "tides", "databases": ["gamma"]}),
        ("search", {"query": "tides", "databases": ["alpha", "gamma"]}),
        ("list_documents", {"database": "gamma"}),
        ("get_document", {"database": "gamma", "document_id": "anything"}),
    ],
)
def test_a_database_outside_the_scope_is_refused_with_the_names_in_scope(scope, tool, args) -> None:
    (result,) = call(scope(), (tool, args))
    assert error_text(result) == "unknown database 'gamma'; databases in scope: alpha, beta"


def test_a_server_over_one_database_never_reaches_the_others(scope) -> None:
    (result,) = call(scope(("gamma",)), ("search", {"query": "tides", "type": "fts"}))
    assert {h["database"] for h in hits(result)} == {"gamma"}


def test_list_databases_counts_each_database_in_scope(scope) -> None:
    (result,) = call(scope(), ("list_databases", {}))
    rows = result.structured_content["result"]
    assert [(r["database"], r["exists"], r["documents"], r["chunks"], r["error"]) for r in rows] == [
        ("alpha", True, 2, 2, None),
        ("beta", True, 2, 2, None),
    ]
    assert rows[0]["embedder"] == "haiku:all-minilm-l6-v2"


def test_list_then_get_a_document(scope) -> None:
    served = scope()
    listed, page, unnamed = call(
        served,
        ("list_documents", {"database": "alpha"}),
        ("list_documents", {"database": "alpha", "limit": 1, "offset": 1}),
        ("list_documents", {}),
    )
    docs = listed.structured_content["documents"]
    assert [d["title"] for d in docs] == ["Tides", "Currents"]
    assert not listed.structured_content["truncated"]
    assert [d["title"] for d in page.structured_content["documents"]] == ["Currents"]
    assert error_text(unnamed) == "several databases are in scope; name one of: alpha, beta"
    (got,) = call(served, ("get_document", {"database": "alpha", "document_id": docs[0]["id"]}))
    document = got.structured_content
    assert document["database"] == "alpha" and document["document"]["title"] == "Tides"
    assert "tidal bulges" in document["chunks"][0]["text"]


def test_list_documents_needs_no_name_with_one_database_in_scope(scope) -> None:
    (result,) = call(scope(("beta",)), ("list_documents", {}))
    assert [d["title"] for d in result.structured_content["documents"]] == ["Tide pools", "Volcanoes"]


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("search", {"query": "  "}, "the query is empty; give some words to search for"),
        ("search", {"query": "x", "type": "fuzzy"}, "unknown search type 'fuzzy'; use hybrid, vector or fts"),
        ("search", {"query": "x", "limit": 0}, "limit must be between 1 and 100"),
        # Argument errors say what to send, as the CLI says `--limit abc`, never pydantic's own words.
        (
            "search",
            {"query": "x", "limit": "many"},
            "invalid argument 'limit': expected a whole number, got \"many\"",
        ),
        (
            "search",
            {"query": "x", "limit": 2.5},
            "invalid argument 'limit': expected a whole number, got 2.5",
        ),
        ("search", {}, "missing argument 'query': expected text"),
        (
            "search",
            {"query": "x", "limit": True},
            "invalid argument 'limit': expected a whole number, got true",
        ),
        (
            "list_documents",
            {"offset": False},
            "invalid argument 'offset': expected a whole number, got false",
        ),
        ("search", {"query": ["tides"]}, "invalid argument 'query': expected text, got [\"tides\"]"),
        (
            "search",
            {"query": "x", "databases": "alpha"},
            'invalid argument \'databases\': expected a list, e.g. ["alpha"], got "alpha"',
        ),
        ("search", {"query": "x", "databases": [1]}, "invalid argument 'databases[0]': expected text, got 1"),
        ("get_document", {"database": "alpha"}, "missing argument 'document_id': expected text"),
        ("search", {"query": "x", "filter": "((("}, "invalid filter '((('"),
        (
            "search",
            {"query": "x", "limt": 3},
            "unknown argument 'limt' for search; it takes query, databases, type, limit, filter",
        ),
        (
            "list_databases",
            {"database": "alpha"},
            "unknown argument 'database' for list_databases; it takes no",
        ),
        ("list_documents", {"database": "alpha", "offset": -1}, "offset must be 0 or more"),
        (
            "get_document",
            {"database": "alpha", "document_id": "nope"},
            "no document with id, id prefix, uri or path 'nope' in database 'alpha'; "
            "list_documents with database 'alpha' gives the ids",
        ),
    ],
)
def test_bad_input_is_a_one_line_tool_error_and_the_server_carries_on(scope, tool, args, message) -> None:
    bad, good = call(scope(), (tool, args), ("search", {"query": "lava", "type": "fts"}))
    text = error_text(bad)
    assert text.startswith(message) and "\n" not in text and "Traceback" not in text
    assert "Input should" not in text and "pydantic" not in text
    assert hits(good)[0]["document_title"] == "Volcanoes"


def test_a_database_that_fails_to_open_names_itself(scope, corpus: Path, tmp_path: Path) -> None:
    served = scope()
    broken = tmp_path / "broken.lancedb"
    shutil.copytree(corpus / "alpha.lancedb", broken)
    shutil.rmtree(broken / "documents.lance")
    locations = (*served.selection.locations, Location("broken", str(broken)))
    searched, listed = call(
        ServerScope(served.ws, Selection(locations)), ("search", {"query": "tides"}), ("list_databases", {})
    )
    assert error_text(searched).startswith("database 'broken' cannot be opened")
    rows = {r["database"]: r for r in listed.structured_content["result"]}
    assert rows["alpha"]["documents"] == 2 and rows["broken"]["error"].startswith("database 'broken'")


def test_a_database_not_created_yet_is_skipped_and_named_as_by_the_cli(scope, tmp_path: Path) -> None:
    served = scope()
    locations = (*served.selection.locations, Location("later", str(tmp_path / "later.lancedb")))
    (searched,) = call(ServerScope(served.ws, Selection(locations)), ("search", {"query": "tides"}))
    assert searched.structured_content["not_created"] == ["later"]
    assert {h["database"] for h in hits(searched)} == {"alpha", "beta"}


def test_errors_name_the_tool_to_call_next_never_a_haiku_command(scope, tmp_path: Path) -> None:
    # The CLI's hints ("haiku list --database alpha", "haiku add-src PATH") mean nothing to an MCP client.
    served = scope()
    later = Location("later", str(tmp_path / "later.lancedb"), chosen_by="--database later")
    missing_doc, never_written = call(
        ServerScope(served.ws, Selection((*served.selection.locations, later))),
        ("get_document", {"database": "alpha", "document_id": "nope"}),
        ("list_documents", {"database": "later"}),
    )
    assert "haiku" not in error_text(missing_doc) and "--database" not in error_text(missing_doc)
    assert error_text(never_written) == (
        "database 'later' does not exist yet; list_databases shows which databases in scope exist"
    )


def test_databases_of_different_embedders_name_the_search_arguments_not_cli_flags(
    scope, tmp_path: Path
) -> None:
    served = scope()
    single_chunk_database(tmp_path / "other.lancedb", ["spring tides"], [[1.0, 0.0, 0.0, 0.0]])
    other = Location("other", str(tmp_path / "other.lancedb"), chosen_by="--database other")
    mixed, by_text = call(
        ServerScope(served.ws, Selection((*served.selection.locations, other))),
        ("search", {"query": "tides"}),
        ("search", {"query": "tides", "type": "fts"}),
    )
    assert error_text(mixed) == (
        "these databases were written with different embedders: alpha (haiku:all-minilm-l6-v2), "
        "beta (haiku:all-minilm-l6-v2), other (t:e); search them together with type 'fts', "
        "or narrow the databases argument to one embedder's databases"
    )
    assert {h["database"] for h in hits(by_text)} == {"alpha", "beta", "other"}


def test_several_databases_failing_read_as_one_sentence_each_then_the_next_step_once(
    scope, tmp_path: Path
) -> None:
    served = scope()
    later = (Location(name, str(tmp_path / f"{name}.lancedb")) for name in ("later", "never"))
    (searched,) = call(ServerScope(served.ws, Selection(tuple(later))), ("search", {"query": "tides"}))
    assert error_text(searched) == (
        "database 'later' does not exist yet; database 'never' does not exist yet; "
        "list_databases shows which databases in scope exist"
    )


def test_no_tool_writes_to_a_database(scope, corpus: Path) -> None:
    def versions() -> list[Any]:
        return [
            wait(maintenance.history(open_database(Location(n, str(corpus / f"{n}.lancedb")))))
            for n in ("alpha", "beta")
        ]

    before = versions()
    served = scope()
    (listed,) = call(served, ("list_documents", {"database": "beta"}))
    doc_id = listed.structured_content["documents"][0]["id"]
    call(
        served,
        ("list_databases", {}),
        ("search", {"query": "tides"}),
        ("search", {"query": "tides", "type": "vector", "databases": ["alpha"]}),
        ("get_document", {"database": "beta", "document_id": doc_id}),
    )
    assert versions() == before


LAVA = (
    "import json\n"
    "for d in list_documents():\n"
    "    for line in open(d['path'] + 'chunks.jsonl'):\n"
    "        c = json.loads(line)\n"
    "        if 'lava' in c['text']:\n"
    "            print(c['database'], c['id'])\n"
)


def test_analyze_runs_once_over_the_scope_with_labelled_citations(scope) -> None:
    script = Script(execute(LAVA), cite_printed(1), text("Only the volcano notes mention lava [1]."))
    (result,) = call(scope(model=script.model), ("analyze", {"question": "Which notes mention lava?"}))
    analysed = result.structured_content
    assert not result.is_error and analysed["grounded"] is True
    assert analysed["executions"][0]["stdout"].startswith("beta ")
    assert [(c["database"], c["document_title"]) for c in analysed["citations"]] == [("beta", "Volcanoes")]
    assert "state" not in analysed
