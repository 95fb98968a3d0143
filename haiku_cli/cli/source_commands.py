"""`haiku sources`, `haiku forget-src`, `haiku sync` and `haiku watch`: keeping added sources fresh."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import interrupted, output, render
from haiku_cli.cli.options import (
    ONE_DATABASE,
    AllDatabases,
    DatabaseNames,
    DatabasePaths,
    Engine,
    Json,
    RayAddress,
    workspace,
)
from haiku_cli.cli.running import add_command, chosen_engine, exit_with, run, run_to_a_stop, usage_error
from haiku_cli.errors import ExitCode, InputError

if TYPE_CHECKING:
    from haiku_cli.api import Location, Workspace


def register(app: typer.Typer) -> None:
    """Add the source commands to the app."""
    add_command(app, "sources", sources)
    add_command(app, "forget-src", forget_src)
    add_command(app, "sync", sync)
    add_command(app, "watch", watch)


def sources(ctx: typer.Context, location: Location = ONE_DATABASE, json: Json = False) -> None:
    """List the sources add-src remembered, with the options each was added with.

    Examples:

    \b
      haiku sources
      haiku sources -d papers --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    listed = run(lambda: api.list_sources(ws, location))
    if json:
        output.print_model(listed)
    else:
        render.remembered_sources(listed)


def forget_src(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Argument(help="The path or URL as `haiku sources` lists it.", metavar="SOURCE")
    ],
    keep_documents: Annotated[
        bool, typer.Option("--keep-documents", help="Keep its documents (they are no longer synced).")
    ] = False,
    location: Location = ONE_DATABASE,
    json: Json = False,
) -> None:
    """Forget a remembered source and delete its documents (unless --keep-documents).

    Examples:

    \b
      haiku forget-src ~/papers/
      haiku forget-src https://example.org/guide.html --keep-documents
    """
    from haiku_cli import api

    ws = workspace(ctx)
    with interrupted.saying(interrupted.whole_line("forget-src")):
        done = run_to_a_stop(lambda: api.forget_source(ws, location, source, keep_documents=keep_documents))
    if json:
        output.print_model(done)
    else:
        render.forgotten_source(done)


def sync(
    ctx: typer.Context,
    all_: AllDatabases = False,
    database: DatabaseNames = None,
    db: DatabasePaths = None,
    engine: Engine = "local",
    ray_address: RayAddress = None,
    json: Json = False,
) -> None:
    """Read every remembered source again: add new files, replace changed ones, delete those gone.

    Examples:

    \b
      haiku sync                   the database, when one is configured
      haiku sync --all
      haiku sync -d papers --json
    """
    from haiku_cli import api

    chosen = chosen_engine(ctx, engine, ray_address)
    ws = workspace(ctx)
    locations = _chosen(ctx, ws, all_, database, db)
    with interrupted.saying(interrupted.sync_line), output.progress_bar("syncing") as bar:
        done = run_to_a_stop(
            lambda: api.sync(
                ws,
                locations,
                progress=bar,
                on_source=None if json else render.source_sync,
                engine=chosen,
                ray_address=ray_address,
                on_note=output.note,
            )
        )
    if json:
        output.print_model(done)
    else:
        for report in done.databases:
            render.sync_summary(report)
    if done.failed:
        exit_with(ExitCode.PARTIAL)


def _chosen(
    ctx: typer.Context,
    ws: Workspace,
    all_: bool,
    database: list[str] | None,
    db: list[Path] | None,
) -> list[Location]:
    """The one database selected, or with --all every writable configured one."""
    from haiku_cli import api

    if all_ and (database or db):
        raise usage_error("--all covers every configured database; drop --database/--db, or --all", ctx)
    if all_:
        return api.writable_databases(ws)
    if not database and not db and len(ws.settings.databases) > 1:
        # The shared refusal names --database/--db; sync and watch can also cover them all.
        try:
            return [ws.select_one()]
        except InputError as exc:
            raise InputError(f"{exc}, or --all for every one that is not read_only") from exc
    return [ws.select_one(database or [], db or [])]


def watch(
    ctx: typer.Context,
    all_: AllDatabases = False,
    sweep: Annotated[
        float,
        typer.Option(
            "--sweep",
            help="Seconds between full sweeps (the backstop for missed events).",
            min=1,
            metavar="S",
        ),
    ] = 300.0,
    poll: Annotated[
        float, typer.Option("--poll", help="Seconds between asking URL sources again.", min=1, metavar="S")
    ] = 600.0,
    debounce: Annotated[
        int,
        typer.Option(
            "--debounce", help="Milliseconds of quiet before changes are synced.", min=10, metavar="MS"
        ),
    ] = 500,
    database: DatabaseNames = None,
    db: DatabasePaths = None,
    json: Annotated[bool, typer.Option("--json", help="Print each change as a JSON line on stdout.")] = False,
) -> None:
    """Keep the remembered sources synced until Ctrl-C: one line per change on stderr.

    Examples:

    \b
      haiku watch
      haiku watch --all --debounce 500
      haiku watch -d notes --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    locations = _chosen(ctx, ws, all_, database, db)

    def changed(event: api.WatchEvent) -> None:
        if json:
            output.print_json_line(event.model_dump(mode="json"))
        else:
            render.watch_event(event, show_database=len(locations) > 1)

    with interrupted.saying(interrupted.watch_line):
        run_to_a_stop(
            lambda: api.watch(
                ws,
                locations,
                on_change=changed,
                on_note=output.note,
                sweep_seconds=sweep,
                poll_seconds=poll,
                debounce_ms=debounce,
            )
        )
