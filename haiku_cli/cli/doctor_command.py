"""`haiku doctor`: check one database or the set, and mend what is safe to mend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output, render
from haiku_cli.cli.options import DATABASE_SET, Json, workspace
from haiku_cli.cli.running import add_command, exit_with, run
from haiku_cli.errors import ExitCode

if TYPE_CHECKING:
    from haiku_cli.api import Selection

_MARK = {"ok": "ok", "warn": "warn", "fail": "FAIL"}


def register(app: typer.Typer) -> None:
    """Add the doctor command to the app."""
    add_command(app, "doctor", doctor)


def doctor(
    ctx: typer.Context,
    selection: Selection = DATABASE_SET,
    fix: Annotated[
        bool, typer.Option("--fix", help="Apply the safe fixes (nothing stored is lost), then check again.")
    ] = False,
    json: Json = False,
) -> None:
    """Check the databases (all configured ones by default); exit 1 when a check fails.

    Each failed check names the command that mends it; --fix applies the safe ones.

    \b
      haiku doctor
      haiku doctor -d notes --fix --json

    Examples:

    \b
      haiku doctor
      haiku doctor -d papers --fix
      haiku doctor --json
    """
    from haiku_cli import api

    ws = workspace(ctx)
    report = run(lambda: api.check_health(ws, selection, fix=fix))
    if json:
        output.print_model(report)
    else:
        for health in report.databases:
            output.out.print(f"{health.database}: {'ok' if health.ok else 'problems found'}", markup=False)
            render.table(
                ["check", "status", "detail", "fix"],
                [
                    (
                        c.check,
                        "fixed" if c.fixed else _MARK[c.status],
                        c.detail,
                        (c.fix or "") if c.status != "ok" else "",
                    )
                    for c in health.checks
                ],
                keep=("check", "status"),
            )
    if not report.ok:
        exit_with(ExitCode.INPUT)
