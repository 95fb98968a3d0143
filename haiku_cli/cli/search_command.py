"""`haiku search`: one ranked, labelled list over the selected databases."""

from __future__ import annotations

import json as jsonlib
from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import freshness_render, output, render
from haiku_cli.cli.options import (
    DATABASE_SET,
    At,
    CheckRemote,
    Filter,
    Json,
    Limit,
    SyncFirst,
    completing,
    workspace,
)
from haiku_cli.cli.running import add_command, run, usage_error
from haiku_cli.cli.stdin import read_text
from haiku_cli.errors import InputError

if TYPE_CHECKING:
    from haiku_cli.api import SearchType, Selection, Workspace


def register(app: typer.Typer) -> None:
    """Add the search command to the app."""
    add_command(app, "search", search)


TypeOption = Annotated[
    str,
    typer.Option(
        "--type",
        "-t",
        help="hybrid, vector or fts.",
        case_sensitive=False,
        metavar="TYPE",
        autocompletion=completing("hybrid", "vector", "fts"),
    ),
]
FromFile = Annotated[
    str | None,
    typer.Option(
        "--from",
        help="Run one query per line of FILE ('-' for standard input): plain text or JSON {id, query}.",
        metavar="FILE",
    ),
]
Files = Annotated[
    bool,
    typer.Option("--files", help="One line per document (its best chunk); --limit counts documents."),
]


def search(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="What to look for.", metavar="QUERY")] = None,
    limit: Limit = None,
    search_type: TypeOption = "hybrid",
    filter_: Filter = None,
    from_file: FromFile = None,
    files: Files = False,
    sync: SyncFirst = False,
    selection: Selection = DATABASE_SET,
    json: Json = False,
    at: At = None,
    check_remote: CheckRemote = False,
) -> None:
    """Search the selected databases (all configured ones by default).

    Examples:

    \b
      haiku search "tide tables" --files        one line per document
      haiku search "recall" --filter "metadata.year = '2024'" --json
      haiku search --from queries.txt --json    one query per line
    """
    from haiku_cli import api

    kind = _search_type(search_type)
    queries = _queries(ctx, query, from_file)
    if sync and at is not None:
        raise usage_error("--sync brings the databases up to date: it cannot search a tag (--at)", ctx)
    ws = workspace(ctx)
    ws.read_at(at)
    ws.check_remote = check_remote

    async def each() -> None:
        synced = await _sync_first(ws, selection) if sync else []
        noted: set[str] = set()  # a skipped database is named once, not once per query
        for qid, text in queries:
            found = await api.search(
                ws,
                selection,
                text,
                search_type=kind,
                limit=limit,
                document_filter=filter_,
                query_id=qid,
                per_document=files,
            )
            found.notes, synced = synced, []  # the first result says what was synced before the searches
            render.not_created([name for name in found.not_created if name not in noted])
            noted.update(found.not_created)
            if from_file is None:
                if json:
                    output.print_model(found)
                else:
                    render.search_hits(text, found.hits, show_database=True, files=files)
            elif json:
                output.print_json_line(found.model_dump(mode="json"))
            else:
                output.out.print(f"# {qid}: {text}", style="bold", markup=False)
                render.search_hits(text, found.hits, show_database=len(selection.names) > 1, files=files)

    run(each)


def _search_type(value: str) -> SearchType:
    value = value.lower()
    if value not in ("hybrid", "vector", "fts"):
        raise InputError(f"unknown --type {value!r}; use hybrid, vector or fts")
    return value  # type: ignore[return-value]


def _queries(ctx: typer.Context, query: str | None, from_file: str | None) -> list[tuple[str | None, str]]:
    """The QUERY, or the queries of --from FILE (each with its id), refusing neither or both."""
    if from_file is not None and query is not None:
        raise usage_error("give a QUERY or --from FILE, not both", ctx)
    if from_file is None and query is None:
        raise usage_error("give a QUERY to search for (or --from FILE)", ctx)
    queries: list[tuple[str | None, str]] = [(None, query or "")]
    if from_file is not None:
        queries = list(read_queries(from_file))
    if not queries:  # as an empty QUERY is: a script that meant to search learns nothing was searched
        where = "standard input" if from_file == "-" else from_file
        raise InputError(f"no queries in {where}; give one query per line")
    return queries


async def _sync_first(ws: Workspace, selection: Selection) -> list[str]:
    """`--sync`: the changed remembered sources synced before the search, a line each on stderr; the
    lines, for the JSON's `notes`."""
    from haiku_cli import api

    notes: list[str] = []

    def note(line: str) -> None:
        notes.append(line)
        output.note(line)

    for database, done in await api.sync_changed(ws, selection, on_note=note):
        freshness_render.synced_before_search(database, done)
        notes.append(api.synced_note(database, done))
    return notes


def read_queries(source: str) -> list[tuple[str, str]]:
    """Queries from a file ('-' is stdin): each line plain text or JSON {"id", "query"}; blank lines skipped.

    A JSON line needs a 'query' field; its 'id' defaults to the line number. Every line is checked before
    any is searched, so a bad one on line 900 is named at once rather than after 899 searches.
    """
    from haiku_cli.api import MAX_QUERY_CHARS

    queries = []
    for n, line in enumerate(read_text(source, what="queries").splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        where = f"{source}:{n}"
        qid, text = _json_query(line, where, n) if line.startswith("{") else (str(n), line)
        if not text.strip():
            raise InputError(f"{where}: the query is empty")
        if len(text) > MAX_QUERY_CHARS:
            raise InputError(
                f"{where}: the query is {len(text):,} characters long; the most is {MAX_QUERY_CHARS:,}"
            )
        queries.append((qid, text))
    return queries


def _json_query(line: str, where: str, n: int) -> tuple[str, str]:
    try:
        obj = jsonlib.loads(line)
    except ValueError as exc:
        raise InputError(f"{where}: not valid JSON ({exc})") from exc
    if not isinstance(obj, dict) or "query" not in obj:
        raise InputError(f"{where}: expected JSON with a 'query' field")
    # `{"query": null}` must not search for the word "None".
    if not isinstance(obj["query"], str):
        raise InputError(f"{where}: expected the query as text in quotes, got {jsonlib.dumps(obj['query'])}")
    return str(obj.get("id", n)), obj["query"]
