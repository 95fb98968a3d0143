"""`haiku add` and `haiku add-src`."""

from __future__ import annotations

from typing import Annotated

import typer

from haiku_cli.cli import output
from haiku_cli.cli.options import DatabaseNames, DatabasePaths, Json, workspace
from haiku_cli.cli.running import exit_with, run
from haiku_cli.errors import ExitCode

Title = Annotated[str | None, typer.Option("--title", help="Title for the document.")]
Meta = Annotated[
    list[str] | None, typer.Option("--meta", help="Metadata KEY=VALUE (repeatable).", metavar="KEY=VALUE")
]


def register(app: typer.Typer) -> None:
    """Add the ingest commands to the app."""
    app.command("add")(add)
    app.command("add-src")(add_src)


def add(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The text to add; '-' reads standard input.")],
    title: Title = None,
    meta: Meta = None,
    database: DatabaseNames = None,
    db: DatabasePaths = None,
    json: Json = False,
) -> None:
    """Add a piece of text as a document."""
    import sys

    from haiku_cli.databases import operations
    from haiku_cli.ingest.pipeline import parse_metadata

    ws = workspace(ctx)
    if text == "-":
        text = sys.stdin.read()
    location = run(ws.select_one, database or [], db or [])
    metadata = run(parse_metadata, meta or [])
    report = run(lambda: operations.add_text(ws, location, text, title=title, metadata=metadata))
    _report(report, json, location.name)


def add_src(
    ctx: typer.Context,
    sources: Annotated[list[str], typer.Argument(help="Files, directories (recursive) and http(s) URLs.")],
    title: Title = None,
    meta: Meta = None,
    database: DatabaseNames = None,
    db: DatabasePaths = None,
    json: Json = False,
) -> None:
    """Add files, directories and URLs; unsupported or unreadable ones are reported and skipped."""
    from haiku_cli.databases import operations
    from haiku_cli.ingest.pipeline import parse_metadata

    ws = workspace(ctx)
    location = run(ws.select_one, database or [], db or [])
    metadata = run(parse_metadata, meta or [])
    with output.progress_bar(f"adding to {location.name}") as bar:
        report = run(
            lambda: operations.add_sources(
                ws, location, sources, title=title, metadata=metadata, progress=bar
            )
        )
    _report(report, json, location.name)


def _report(report, as_json: bool, database: str) -> None:
    if as_json:
        output.print_model(report)
    else:
        for o in report.outcomes:
            if o.status == "failed":
                output.error(o.error or o.source)
            else:
                detail = f" ({o.chunks} chunks)" if o.chunks else ""
                output.out.print(f"{o.status:9} {o.source} → {o.document_id}{detail}", markup=False)
        counts = {
            s: sum(1 for o in report.outcomes if o.status == s) for s in ("added", "updated", "unchanged")
        }
        summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        if report.failed:
            summary += (", " if summary else "") + f"{len(report.failed)} failed"
        output.err.print(f"{database}: {summary or 'nothing to add'}", markup=False, style="dim")
    if report.failed:
        # Nothing usable at all is bad input; some failures among successes is a partial batch.
        exit_with(ExitCode.INPUT if len(report.failed) == len(report.outcomes) else ExitCode.PARTIAL)
