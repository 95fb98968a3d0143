"""`haiku ask`: a grounded answer with numbered citations over the selected databases."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output, render
from haiku_cli.cli.options import (
    DATABASE_SET_IF_GIVEN,
    At,
    CheckRemote,
    Filter,
    Json,
    ModelName,
    Rescope,
    SessionName,
    workspace,
)
from haiku_cli.cli.running import add_command, run

if TYPE_CHECKING:
    from haiku_cli.api import AskResult, Selection

Question = Annotated[
    str, typer.Argument(help="The question to answer from your documents.", metavar="QUESTION")
]


def register(app: typer.Typer) -> None:
    """Add the ask command to the app."""
    add_command(app, "ask", ask)


def ask(
    ctx: typer.Context,
    question: Question,
    chosen: Selection | None = DATABASE_SET_IF_GIVEN,
    filter_: Filter = None,
    model: ModelName = None,
    session: SessionName = None,
    rescope: Rescope = False,
    json: Json = False,
    at: At = None,
    check_remote: CheckRemote = False,
) -> None:
    """Answer a question from the selected databases (all configured ones by default), citing its sources.

    With --session the question continues that saved conversation (as `haiku chat --session` does).

    Examples:

    \b
      haiku ask "What does the thesis say about tides?"
      haiku ask "Which papers cite Salton?" -d papers --model openai:gpt-4o
      haiku ask "And in 2024?" --session thesis   a follow-up
    """
    from haiku_cli import api

    ws = workspace(ctx)
    ws.read_at(at)
    ws.check_remote = check_remote
    result: AskResult
    if session is not None:
        result = run(
            lambda: api.ask_in_session(
                ws, chosen, question, session=session, model=model, document_filter=filter_, rescope=rescope
            )
        )
    else:
        selection = chosen if chosen is not None else ws.select_many()
        result = run(lambda: api.ask(ws, selection, question, model=model, document_filter=filter_))
    render.not_created(result.not_created)
    if json:
        output.print_model(result)
        return
    render.answer(result.answer)
    render.citations(result.citations, question)
    render.grounding_notice(result)
