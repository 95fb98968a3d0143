"""`haiku search`: one ranked, labelled list over the selected databases."""

from __future__ import annotations

import json as jsonlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output, render
from haiku_cli.cli.options import DatabaseNames, DatabasePaths, Filter, Json, workspace
from haiku_cli.cli.running import run
from haiku_cli.errors import InputError

if TYPE_CHECKING:
    from haiku_cli.api import SearchResults
    from haiku_cli.search.candidates import SearchType


def register(app: typer.Typer) -> None:
    """Add the search command to the app."""
    app.command("search")(search)


def search(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="What to look for.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="How many results (default 10).")] = None,
    search_type: Annotated[
        str, typer.Option("--type", "-t", help="hybrid (default), vector or fts.", case_sensitive=False)
    ] = "hybrid",
    filter_: Filter = None,
    from_file: Annotated[
        Path | None,
        typer.Option("--from", help="Run one query per line of FILE (plain text or JSON {id, query})."),
    ] = None,
    database: DatabaseNames = None,
    db: DatabasePaths = None,
    json: Json = False,
) -> None:
    """Search the selected databases (all configured ones by default)."""
    from haiku_cli import api

    ws = workspace(ctx)
    kind = run(_search_type, search_type)
    selection = run(ws.select_many, database or [], db or [])
    if from_file is not None:
        if query is not None:
            run(_fail, "give a QUERY or --from FILE, not both")
        queries = run(read_queries, from_file)

        async def many() -> None:
            for qid, text in queries:
                found = await api.search(
                    ws,
                    selection,
                    text,
                    search_type=kind,
                    limit=limit,
                    document_filter=filter_,
                    query_id=qid,
                )
                _not_created_notice(found)
                if json:
                    output.print_json_line(found.model_dump(mode="json"))
                else:
                    output.out.print(f"# {qid}: {text}", style="bold", markup=False)
                    render.search_hits(text, found.hits, show_database=len(selection.names) > 1)

        run(many)
        return
    if query is None:
        run(_fail, "give a QUERY to search for (or --from FILE)")
    found = run(
        lambda: api.search(ws, selection, query, search_type=kind, limit=limit, document_filter=filter_)
    )
    _not_created_notice(found)
    if json:
        output.print_model(found)
    else:
        render.search_hits(query, found.hits, show_database=True)


def _not_created_notice(found: SearchResults) -> None:
    for name in found.not_created:
        output.err.print(
            f"(database '{name}' is not created yet: nothing added to it; searched the others)",
            style="dim",
            markup=False,
        )


def _search_type(value: str) -> SearchType:
    value = value.lower()
    if value not in ("hybrid", "vector", "fts"):
        raise InputError(f"unknown --type {value!r}; use hybrid, vector or fts")
    return value  # type: ignore[return-value]


def _fail(message: str) -> None:
    raise InputError(message)


def read_queries(path: Path) -> list[tuple[str, str]]:
    """Queries from a file: each line plain text or JSON {"id", "query"}; blank lines skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read queries from {path}: {exc}") from exc
    queries = []
    for n, line in enumerate(lines, start=1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                obj = jsonlib.loads(line)
                queries.append((str(obj.get("id", n)), str(obj["query"])))
            except (ValueError, KeyError) as exc:
                raise InputError(f"{path}:{n}: expected JSON with a 'query' field ({exc})") from exc
        else:
            queries.append((str(n), line))
    return queries
