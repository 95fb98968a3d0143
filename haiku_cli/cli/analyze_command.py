"""`haiku analyze`: answer by computing over the selected databases' documents in a sandbox."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output, render
from haiku_cli.cli.options import DATABASE_SET, At, Filter, Json, ModelName, workspace
from haiku_cli.cli.running import add_command, run

if TYPE_CHECKING:
    from haiku_cli.api import Selection


def register(app: typer.Typer) -> None:
    """Add the analyze command to the app."""
    add_command(app, "analyze", analyze)


def analyze(
    ctx: typer.Context,
    question: Annotated[
        str,
        typer.Argument(help="A question that needs counting, comparing or tabulating.", metavar="QUESTION"),
    ],
    selection: Selection = DATABASE_SET,
    filter_: Filter = None,
    model: ModelName = None,
    show_code: Annotated[
        bool, typer.Option("--show-code", help="Print each program the model ran, with its output.")
    ] = False,
    json: Json = False,
    at: At = None,
) -> None:
    """Answer a question by letting the model run Python over the documents (all configured databases).

    Examples:

    \b
      haiku analyze "How many documents mention each year?"
      haiku analyze "Tabulate the authors by paper count" -d papers --show-code
    """
    from haiku_cli import api

    ws = workspace(ctx)
    ws.read_at(at)
    result = run(lambda: api.analyze(ws, selection, question, model=model, document_filter=filter_))
    render.not_created(result.not_created)
    if json:
        output.print_model(result)
        return
    if show_code:
        render.executions(result.executions)
    render.answer(result.answer)
    render.citations(result.citations, question)
    render.grounding_notice(result)
