"""`haiku config path|show` and `haiku databases`."""

from __future__ import annotations

from typing import Annotated

import typer

from haiku_cli.cli import config_render, output, render
from haiku_cli.cli.options import Json, workspace
from haiku_cli.cli.running import add_command, run


def register(app: typer.Typer) -> None:
    """Add the configuration commands to the app."""
    config_app = typer.Typer(
        help="Where the configuration is read from and what it resolves to.", no_args_is_help=True
    )
    add_command(config_app, "path", path)
    add_command(config_app, "show", show)
    app.add_typer(config_app, name="config")
    add_command(app, "databases", databases)


def path(ctx: typer.Context, json: Json = False) -> None:
    """Print the config file path (whether or not it exists).

    Examples:

    \b
      haiku config path
      haiku config path --json
    """
    from haiku_cli.config.paths import config_path, missing_is_an_error, named_by

    explicit = (ctx.find_root().obj or {}).get("config")
    p = config_path(explicit)
    named = named_by(explicit)
    fails = missing_is_an_error(explicit)
    if json:
        output.print_json({"config_file": str(p), "config_exists": p.exists(), "named_by": named})
        return
    output.out.print(str(p), markup=False, soft_wrap=True)
    if not p.exists():
        then = f"named by {fails}, other commands fail until it exists" if fails else "defaults apply"
        output.err.print(f"(no file there yet: {then})", style="dim", markup=False)


def show(ctx: typer.Context, json: Json = False) -> None:
    """Print the settings in effect as TOML that loads as a config file (secrets hidden).

    Examples:

    \b
      haiku config show
      haiku --config team.toml config show --json
    """
    from haiku_cli import api

    shown = api.show_config(workspace(ctx))
    if json:
        output.print_model(shown)
    else:
        config_render.config(shown)


def databases(
    ctx: typer.Context,
    show_locations: Annotated[
        bool,
        typer.Option("--show-locations", help="Also print where each database lives (JSON always has it)."),
    ] = False,
    json: Json = False,
) -> None:
    """List the configured databases: kind, whether they exist, sizes and embedder.

    Examples:

    \b
      haiku databases
      haiku databases --show-locations
      haiku databases --json
    """
    from haiku_cli import api

    rows = run(lambda: api.overview(workspace(ctx)))
    if json:
        output.print_model(rows)
    else:
        render.databases(rows, show_locations=show_locations)
