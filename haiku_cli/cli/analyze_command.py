"""`haiku analyze`: answer by computing over the selected databases' documents in a sandbox."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from haiku_cli.cli import ask_command, output
from haiku_cli.cli.options import DatabaseNames, DatabasePaths, Filter, Json, ModelName, workspace
from haiku_cli.cli.running import run

if TYPE_CHECKING:
    from haiku_cli.agents.analyze import AnalyzeResult
    from haiku_cli.sandbox.runner import Execution


def register(app: typer.Typer) -> None:
    """Add the analyze command to the app."""
    app.command("analyze")(analyze)


def analyze(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="A question that needs counting, comparing or tabulating.")],
    database: DatabaseNames = None,
    db: DatabasePaths = None,
    filter_: Filter = None,
    model: ModelName = None,
    show_code: Annotated[
        bool, typer.Option("--show-code", help="Print each program the model ran, with its output.")
    ] = False,
    json: Json = False,
) -> None:
    """Answer a question by letting the model run Python over the documents (all configured databases)."""
    from haiku_cli.agents.analyze import analyze as analyze_documents

    ws = workspace(ctx)
    selection = run(ws.select_many, database or [], db or [])
    result = run(lambda: analyze_documents(ws, selection, question, model=model, document_filter=filter_))
    if json:
        output.print_json(as_json(result, selection.names))
        return
    if show_code:
        executions(result.executions)
    ask_command.answer(result.answer)
    ask_command.citations(result.citations, question)
    ask_command.grounding_notice(result)


def as_json(result: AnalyzeResult, databases: Sequence[str]) -> dict[str, Any]:
    """`ask`'s JSON shape plus `executions`: every program run, as {code, stdout, stderr, ok}."""
    return {
        **ask_command.as_json(result, databases),
        "executions": [e.model_dump(mode="json") for e in result.executions],
    }


def executions(runs: Sequence[Execution]) -> None:
    """Each program with its output, before the answer."""
    from rich.syntax import Syntax  # loads pygments: only when programs are shown

    for n, ran in enumerate(runs, start=1):
        status = Text(f"── program {n} ", style="bold")
        status.append("ok" if ran.ok else "failed", style="green" if ran.ok else "red")
        output.out.print(status)
        output.out.print(Syntax(ran.code, "python", theme="ansi_dark", background_color="default"))
        for text, style in ((ran.stdout, ""), (ran.stderr, "red")):
            if text:
                output.out.print(Text(text.rstrip("\n"), style=style), soft_wrap=True)
        output.out.print()
