"""Commands that work on exactly one database: list, get, delete, info, vacuum, rebuild, history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import ingest_render, interrupted, output, render
from haiku_cli.cli.options import (
    ONE_DATABASE,
    ONE_DATABASE_HOLDING,
    At,
    CheckRemote,
    Filter,
    Json,
    whole_number,
    workspace,
)
from haiku_cli.cli.running import add_command, run

if TYPE_CHECKING:
    from haiku_cli.api import DocumentPart, Location

_PAGE = 50  # documents `list` shows by default

DocumentId = Annotated[
    str,
    typer.Argument(
        help="The document: its id or a unique start of it (see `haiku list`), its uri, or the path it was "
        "added from.",
        metavar="DOC",
    ),
]


def register(app: typer.Typer) -> None:
    """Add the one-database commands to the app."""
    for name, fn in (
        ("list", list_),
        ("get", get),
        ("delete", delete),
        ("info", info),
        ("vacuum", vacuum),
        ("rebuild", rebuild),
        ("history", history),
    ):
        add_command(app, name, fn)


def list_(
    ctx: typer.Context,
    filter_: Filter = None,
    limit: Annotated[
        int,
        typer.Option("--limit", "-n", help="At most this many documents.", metavar="N", parser=whole_number),
    ] = _PAGE,
    offset: Annotated[
        int,
        typer.Option("--offset", help="Skip this many documents first.", metavar="N", parser=whole_number),
    ] = 0,
    loc: Location = ONE_DATABASE,
    json: Json = False,
    at: At = None,
) -> None:
    """List documents, oldest first, a page at a time (50 unless --limit says otherwise).

    Examples:

    \b
      haiku list --offset 50
      haiku list --filter "metadata.project = 'thesis'"
      haiku list --filter "created_at >= '2024-01-01'" --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    ws.read_at(at)
    page = run(lambda: api.list_documents(ws, loc, document_filter=filter_, limit=limit, offset=offset))
    if json:
        output.print_model(page)
        _more_follow(page.truncated, offset, limit)
        return
    if not page.documents:
        # Say why it is empty when the options are the reason, not the database.
        why = " match the filter" if filter_ else ""
        # On stderr, as search's "no results": stdout stays empty for a script reading the list.
        output.err.print(f"no documents{why}{f' after the first {offset}' if offset else ''}", style="dim")
        return
    shown = api.short_ids([d.id for d in page.documents])
    render.table(
        ["id", "title", "uri", "updated"],
        [
            (shown[d.id], d.title or "", d.uri or "", d.updated_at.strftime("%Y-%m-%d %H:%M"))
            for d in page.documents
        ],
        keep=("id", "updated"),
    )
    _more_follow(page.truncated, offset, limit)  # after the table, where a reader at its end looks


def _more_follow(truncated: bool, offset: int, limit: int) -> None:
    if truncated:
        more = f"--offset {offset + limit}" + (f" --limit {limit}" if limit != _PAGE else "")
        output.err.print(f"(more documents follow; see them with {more})", style="dim", markup=False)


def get(
    ctx: typer.Context,
    document_id: DocumentId,
    loc: Location = ONE_DATABASE_HOLDING,
    lines: Annotated[
        str | None,
        typer.Option(
            "--lines",
            help="Print only these lines of the document's source file: A:B, A: (to the end) or A.",
            metavar="A:B",
        ),
    ] = None,
    chunk: Annotated[
        bool,
        typer.Option("--chunk", help="DOC is a chunk id (from search --json or a citation): print its part."),
    ] = False,
    json: Json = False,
    at: At = None,
    check_remote: CheckRemote = False,
) -> None:
    """Show one document with its content, or exactly one part of it.

    Examples:

    \b
      haiku get 3f2b8c1e                        the id's start, as list shows it
      haiku get ~/notes/tides.md --lines 12:30  by the path it was added from
      haiku get --chunk CHUNK_ID --json         the part a citation stands for
    """
    from haiku_cli import api
    from haiku_cli.errors import InputError

    ws = workspace(ctx)
    ws.read_at(at)
    ws.check_remote = check_remote
    if lines is not None or chunk:
        span = api.parse_lines(lines) if lines is not None and not chunk else None
        _show_part(run(lambda: api.get_part(ws, loc, document_id, lines=span)), json)
        return
    try:
        found = run(lambda: api.get_document(ws, loc, document_id))
    except InputError as missing:
        # A chunk id names the part it was cut from (`haiku get CHUNK_ID`).
        try:
            part = run(lambda: api.get_part(ws, loc, document_id))
        except InputError:
            raise missing from None
        _show_part(part, json)
        return
    if json:
        output.print_model(found)
    else:
        render.document(found)


def _show_part(part: DocumentPart, json: bool) -> None:
    if json:
        output.print_model(part)
    else:
        render.document_part(part)


def delete(
    ctx: typer.Context,
    document_id: DocumentId,
    loc: Location = ONE_DATABASE_HOLDING,
    json: Json = False,
) -> None:
    """Delete a document and its chunks.

    Examples:

    \b
      haiku delete 3f2b8c1e
      haiku delete ~/notes/old.md -d notes --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    gone = run(lambda: api.delete_document(ws, loc, document_id))
    if json:
        output.print_model(gone)
        return
    doc = gone.document
    short = api.short_ids([doc.id])[doc.id]
    parts = f" and the {gone.parts} documents read out of it" if gone.parts else ""
    output.out.print(
        f"deleted {short} ({doc.title or doc.uri or 'untitled'}){parts} from {gone.database}", markup=False
    )


def info(ctx: typer.Context, loc: Location = ONE_DATABASE, json: Json = False) -> None:
    """Counts, size on disk, embedder, schema version, index state and table versions.

    Examples:

    \b
      haiku info
      haiku info -d papers --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    facts = run(lambda: api.info(ws, loc))
    if json:
        output.print_model(facts)
    else:
        render.database_info(facts)


def vacuum(ctx: typer.Context, loc: Location = ONE_DATABASE, json: Json = False) -> None:
    """Compact the tables, remove old versions, upgrade an older layout in place (older chunks get their
    place in their documents where it is found).

    Examples:

    \b
      haiku vacuum
      haiku vacuum -d papers
    """
    from haiku_cli import api

    ws = workspace(ctx)
    done = run(lambda: api.vacuum(ws, loc))
    if json:
        output.print_model(done)
        return
    before, after = render.size(done.size_bytes_before), render.size(done.size_bytes_after)
    upgraded = " (layout upgraded to this haiku's)" if done.upgraded_layout else ""
    n = done.placed_chunks
    placed = f"; {n} older chunk{'' if n == 1 else 's'} placed in the document text" if n else ""
    output.out.print(f"vacuumed {done.database}: {before} → {after}{upgraded}{placed}", markup=False)


def rebuild(ctx: typer.Context, loc: Location = ONE_DATABASE, json: Json = False) -> None:
    """Re-chunk and re-embed every document with the configured embedder (all-or-nothing).

    Examples:

    \b
      haiku rebuild
      haiku rebuild -d papers --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    with interrupted.saying(interrupted.rebuild_line), output.progress_bar(f"rebuilding {loc.name}") as bar:
        done = run(lambda: api.rebuild(ws, loc, bar))
    if json:
        output.print_model(done)
        return
    kept = ingest_render.kept_ids(done.kept_chunk_ids)
    chunks = f"{done.chunks} chunk{'s' * (done.chunks != 1)}"
    output.out.print(f"rebuilt {done.database}: {chunks}{kept} ({done.embedder})", markup=False)


def history(ctx: typer.Context, loc: Location = ONE_DATABASE, json: Json = False) -> None:
    """The commands that wrote the database, newest first (--json adds every table version).

    Examples:

    \b
      haiku history
      haiku history -d papers --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    found = run(lambda: api.history(ws, loc))
    if json:
        output.print_model(found)
        return
    if found.writes:
        render.table(
            ["time", "command", "versions"],
            [
                (
                    w.timestamp.strftime("%Y-%m-%d %H:%M:%S UTC"),
                    w.operation,
                    ", ".join(f"{table} v{v}" for table, v in w.versions.items()),
                )
                for w in found.writes
            ],
            keep=("time",),
            cut_first=("versions",),  # the command is what a reader looks for; --json has every version
        )
        return
    # Written by a haiku that did not log its commands: the table versions are all there is.
    output.err.print("(no commands logged for this database; its table versions follow)", style="dim")
    render.table(
        ["table", "version", "time"],
        [(v.table, v.version, v.timestamp.strftime("%Y-%m-%d %H:%M:%S UTC")) for v in found.versions],
    )
