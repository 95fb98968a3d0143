"""`haiku config path|show` and `haiku databases`."""

from __future__ import annotations

import json as jsonlib
from typing import Annotated

import typer

from haiku_cli.cli import output, render
from haiku_cli.cli.options import Json, workspace
from haiku_cli.cli.running import run


def register(app: typer.Typer) -> None:
    """Add the configuration commands to the app."""
    config_app = typer.Typer(
        help="Where the configuration is read from and what it resolves to.", no_args_is_help=True
    )
    config_app.command("path")(path)
    config_app.command("show")(show)
    app.add_typer(config_app, name="config")
    app.command("databases")(databases)


def path(ctx: typer.Context) -> None:
    """Print the config file path (whether or not it exists)."""
    from haiku_cli.config.paths import config_path

    root = ctx.find_root().obj or {}
    p = config_path(root.get("config"))
    output.out.print(str(p), markup=False, soft_wrap=True)
    if not p.exists():
        output.err.print("(no file there yet: defaults apply)", style="dim")


def show(ctx: typer.Context, json: Json = False) -> None:
    """Print the resolved settings, including each database's location."""
    from haiku_cli.config.paths import data_dir
    from haiku_cli.databases.selection import configured

    ws = workspace(ctx)
    data = ws.settings.model_dump(mode="json")
    data["databases"] = {
        name: {
            "uri": loc.uri,
            "kind": loc.kind,
            "read_only": loc.read_only,
            "storage_options": sorted(loc.storage_options),
        }
        for name, loc in configured(ws.settings).items()
    }
    data["config_file"] = str(ws.config_file)
    data["data_dir"] = str(data_dir())
    if json:
        output.print_json(data)
        return
    output.out.print(f"# config file: {data.pop('config_file')}", markup=False, style="dim")
    output.out.print(f"# data dir:    {data.pop('data_dir')}", markup=False, style="dim")
    for section, values in data.items():
        output.out.print(f"\n[{section}]", style="bold", markup=False)
        for key, value in values.items():
            line = f"{key} = {_toml(value)}" if value is not None else f"# {key} is not set"
            output.out.print(line, markup=False)


def _toml(value: object) -> str:
    """A value in TOML syntax (strings quoted, tables inline)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return jsonlib.dumps(value)
    return str(value)


def databases(
    ctx: typer.Context,
    show_locations: Annotated[
        bool,
        typer.Option("--show-locations", help="Also print where each database lives (JSON always has it)."),
    ] = False,
    json: Json = False,
) -> None:
    """List the configured databases: kind, whether they exist, sizes and embedder."""
    from haiku_cli import api

    ws = workspace(ctx)
    rows = run(lambda: api.overview(ws))
    if json:
        output.print_model(rows)
        return
    columns = ["name", "kind", "exists", "documents", "chunks", "embedder"]
    if show_locations:
        columns.append("location")
    table_rows = []
    for r in rows:
        row = [
            r.database,
            r.kind,
            "yes" if r.exists else ("error" if r.error else "no"),
            r.documents,
            r.chunks,
            r.embedder,
        ]
        if show_locations:
            row.append(r.location)
        table_rows.append(row)
    render.table(columns, table_rows)
    for r in rows:
        if r.error:
            output.error(r.error)
