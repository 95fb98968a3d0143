"""`haiku tag create|list|delete|restore`: named snapshots of a database, read back with `--at TAG`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output, render
from haiku_cli.cli.options import ONE_DATABASE, AllDatabases, DatabaseNames, DatabasePaths, Json, workspace
from haiku_cli.cli.running import add_command, run, run_to_a_stop, usage_error

if TYPE_CHECKING:
    from haiku_cli.api import Location

TagName = Annotated[
    str, typer.Argument(help="The tag's name (letters, digits, '.', '-', '_').", metavar="NAME")
]


def register(app: typer.Typer) -> None:
    """Add `haiku tag ...` to the app."""
    tag_app = typer.Typer(
        help="Named snapshots of databases (read with --at TAG).",
        no_args_is_help=True,
    )
    add_command(tag_app, "create", create)
    add_command(tag_app, "list", list_)
    add_command(tag_app, "delete", delete)
    add_command(tag_app, "restore", restore)
    app.add_typer(tag_app, name="tag")


def create(
    ctx: typer.Context,
    name: TagName,
    all_: AllDatabases = False,
    database: DatabaseNames = None,
    db: DatabasePaths = None,
    json: Json = False,
) -> None:
    """Tag the database's current state (with --all: every configured database's, all or none).

    Examples:

    \b
      haiku tag create before-cleanup
      haiku tag create 2024-q4 --all
      haiku search "tides" --at 2024-q4
    """
    from haiku_cli import api

    ws = workspace(ctx)
    if all_ and (database or db):
        raise usage_error("--all covers every configured database; drop --database/--db, or --all", ctx)
    if all_:
        made = run(lambda: api.create_tag_everywhere(ws, name))
    else:
        loc = ws.select_one(database or [], db or [])
        made = [run(lambda: api.create_tag(ws, loc, name))]
    if json:
        output.print_json([m.model_dump(mode="json") for m in made])
        return
    for m in made:
        output.out.print(f"tagged {m.database} as {m.tag.name}", markup=False)


def list_(ctx: typer.Context, loc: Location = ONE_DATABASE, json: Json = False) -> None:
    """List the database's tags, oldest first.

    Examples:

    \b
      haiku tag list
      haiku tag list -d papers --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    found = run(lambda: api.list_tags(ws, loc))
    if json:
        output.print_model(found)
        return
    if not found.tags:
        output.out.print(f"no tags in {found.database}", style="dim", markup=False)
        return
    render.table(
        ["tag", "created", "versions"],
        [
            (
                t.name,
                t.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                ", ".join(f"{table} v{v}" for table, v in t.versions.items()),
            )
            for t in found.tags
        ],
        keep=("tag", "created"),
    )


def delete(ctx: typer.Context, name: TagName, loc: Location = ONE_DATABASE, json: Json = False) -> None:
    """Delete a tag (the data stays; the versions only it kept go at the next cleanup).

    Examples:

    \b
      haiku tag delete before-cleanup
      haiku tag delete v1 -d papers
    """
    from haiku_cli import api

    ws = workspace(ctx)
    gone = run(lambda: api.delete_tag(ws, loc, name))
    if json:
        output.print_model(gone)
    else:
        output.out.print(f"deleted tag {gone.tag.name} of {gone.database}", markup=False)


def restore(
    ctx: typer.Context,
    name: TagName,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask first.")] = False,
    loc: Location = ONE_DATABASE,
    json: Json = False,
) -> None:
    """Make the tagged state the database's latest again (all-or-nothing; asks first unless --yes).

    What was written since stays in the history, and under any later tag.

    Examples:

    \b
      haiku tag restore before-cleanup
      haiku tag restore v1 -d papers --yes
    """
    from haiku_cli import api
    from haiku_cli.errors import InputError

    ws = workspace(ctx)
    # A database or tag that does not exist is said so before anything is asked.
    run(lambda: api.find_tag(ws, loc, name))
    if not yes:
        if not sys.stdin.isatty():
            raise InputError(f"restoring tag '{name}' replaces what {loc.name} holds now; confirm with --yes")
        if not typer.confirm(f"restore {loc.name} to tag {name}? what it holds now is replaced", err=True):
            raise typer.Exit(1)
    from haiku_cli.cli import interrupted

    with interrupted.saying(interrupted.whole_line("tag restore")):
        done = run_to_a_stop(lambda: api.restore_tag(ws, loc, name))
    if json:
        output.print_model(done)
    else:
        output.out.print(f"restored {done.database} to tag {done.tag.name}", markup=False)
