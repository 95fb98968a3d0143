"""`haiku publish`: copy a database's consistent state to a folder or bucket that others read-only search."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output, render
from haiku_cli.cli.options import ONE_DATABASE, Json, workspace
from haiku_cli.cli.running import add_command, run

if TYPE_CHECKING:
    from haiku_cli.api import Location


def register(app: typer.Typer) -> None:
    """Add `haiku publish` to the app."""
    add_command(app, "publish", publish)


def publish(
    ctx: typer.Context,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="Where to publish: s3://bucket/prefix, a local folder, or a configured database's name.",
            metavar="URI",
        ),
    ],
    tag: Annotated[
        str | None,
        typer.Option(
            "--tag",
            help="Publish this tag's state (default: the latest, under the writer lock).",
            metavar="NAME",
        ),
    ] = None,
    loc: Location = ONE_DATABASE,
    json: Json = False,
) -> None:
    """Publish the database for others to search read-only: only what changed since the last publish to
    the same place is copied, and readers switch to it in one step (haiku help sharing).

    Readers configure it like any database: [databases] team = { uri = "s3://...", read_only = true }.
    Credentials come from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...).

    Examples:

    \b
      haiku publish --database notes --to s3://team-bucket/notes
      haiku publish -d notes --to s3://team-bucket/notes --tag v3
      haiku publish --to ./published --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    done = run(lambda: api.publish(ws, loc, to, tag=tag))
    if json:
        output.print_model(done)
        return
    if done.unchanged:
        output.out.print(
            f"{done.to} already holds this state of {done.database}; nothing written", markup=False
        )
        return
    what = f"{done.files} file{'' if done.files == 1 else 's'}, {render.size(done.bytes)}"
    state = f"tag {done.published.tag}" if done.published.tag else "its latest state"
    output.out.print(f"published {done.database} ({state}) to {done.to}: {what} copied", markup=False)
