"""Commands that show pictures: `pictures` writes a document's to a folder, `visualize` draws a chunk."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output
from haiku_cli.cli.options import ONE_DATABASE_HOLDING, Json, workspace
from haiku_cli.cli.running import add_command, run

if TYPE_CHECKING:
    from haiku_cli.api import Location

DocumentId = Annotated[
    str,
    typer.Argument(help="The document: its id or a unique start of it, its uri, or its path.", metavar="DOC"),
]


def register(app: typer.Typer) -> None:
    """Add `pictures` and `visualize` to the app."""
    add_command(app, "pictures", pictures)
    add_command(app, "visualize", visualize)


def pictures(
    ctx: typer.Context,
    document_id: DocumentId,
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="The folder to write them into (made if missing).", metavar="DIR"),
    ],
    loc: Location = ONE_DATABASE_HOLDING,
    json: Json = False,
) -> None:
    """Write a document's pictures into a folder, one file per picture (REFERENCE.png or .jpg).

    Examples:

    \b
      haiku pictures 3f2b8c1e --out figures/
      haiku pictures paper.pdf -o figures/ --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    written = run(lambda: api.write_pictures(ws, loc, document_id, out))
    if json:
        output.print_model(written)
        return
    if not written.pictures:
        output.out.print(f"{written.document_title or written.document_id} has no pictures", style="dim")
        return
    for p in written.pictures:
        caption = f"  {p.caption}" if p.caption else ""
        output.out.print(f"{p.path}{caption}", markup=False)
    output.err.print(
        f"wrote {len(written.pictures)} picture(s) to {written.folder}", style="dim", markup=False
    )


def visualize(
    ctx: typer.Context,
    chunk_id: Annotated[
        str, typer.Argument(help="The chunk's id (chunk_id in search --json).", metavar="CHUNK")
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="The folder to write the PNG into (default: here).", metavar="DIR"),
    ] = None,
    loc: Location = ONE_DATABASE_HOLDING,
    json: Json = False,
) -> None:
    """Draw the page(s) of a PDF chunk with its text highlighted, as PNG files, and say where they are.

    Examples:

    \b
      haiku visualize CHUNK_ID
      haiku visualize CHUNK_ID --out pages/
    """
    from haiku_cli import api

    ws = workspace(ctx)
    drawn = run(lambda: api.visualize_chunk(ws, loc, chunk_id, out))
    if json:
        output.print_model(drawn)
        return
    title = drawn.document_title or drawn.document_uri or drawn.document_id
    for page in drawn.pages:
        found = f"{page.lines_found} of the chunk's {page.lines} lines highlighted"
        output.out.print(f"{page.path}  page {page.page} of {title}: {found}", markup=False)
