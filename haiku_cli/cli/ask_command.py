"""`haiku ask`: a grounded answer with numbered citations over the selected databases."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from haiku_cli.cli import output, render
from haiku_cli.cli.options import (
    DatabaseNames,
    DatabasePaths,
    Filter,
    Json,
    ModelName,
    Rescope,
    SessionName,
    workspace,
)
from haiku_cli.cli.running import run

if TYPE_CHECKING:
    from haiku_cli.agents.question import AskResult
    from haiku_cli.capabilities.citations import Citation


def register(app: typer.Typer) -> None:
    """Add the ask command to the app."""
    app.command("ask")(ask)


def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question to answer from your documents.")],
    database: DatabaseNames = None,
    db: DatabasePaths = None,
    filter_: Filter = None,
    model: ModelName = None,
    session: SessionName = None,
    rescope: Rescope = False,
    json: Json = False,
) -> None:
    """Answer a question from the selected databases (all configured ones by default), citing its sources.

    With --session the question continues that saved conversation (as `haiku chat --session` does).
    """
    ws = workspace(ctx)
    if session is not None:
        from haiku_cli.chat.host import ask_in_session

        chosen = run(ws.select_many, database, db) if database or db else None
        result = run(
            lambda: ask_in_session(
                ws, chosen, question, session=session, model=model, document_filter=filter_, rescope=rescope
            )
        )
        databases = result.databases
    else:
        from haiku_cli.agents.ask import ask as ask_documents

        selection = run(ws.select_many, database or [], db or [])
        result = run(lambda: ask_documents(ws, selection, question, model=model, document_filter=filter_))
        databases = selection.names
    if json:
        output.print_json(as_json(result, databases))
        return
    answer(result.answer)
    citations(result.citations, question)
    grounding_notice(result)


def grounding_notice(result: AskResult) -> None:
    """Say on stderr when an answer is not grounded, or broke the citation policy."""
    if result.violation:
        output.error("warning: the model neither cited its sources nor said the answer is ungrounded")
    elif not result.grounded:
        output.err.print("(not grounded in the documents)", style="dim")


def as_json(result: AskResult, databases: Sequence[str]) -> dict[str, Any]:
    """The `--json` shape: answer, grounded, citations (each with its database) and usage."""
    return {
        "answer": result.answer,
        "grounded": result.grounded,
        "violation": result.violation,
        "databases": list(databases),
        "citations": [c.model_dump(mode="json") for c in result.citations],
        "usage": result.usage,
    }


def answer(text: str) -> None:
    """The answer: rendered Markdown on a terminal, the text as written when piped."""
    if output.out.is_terminal:
        # Imported here: Markdown rendering loads markdown-it, which other commands never need.
        from rich.markdown import Markdown

        output.out.print(Markdown(text))
    else:
        output.out.print(text, markup=False, highlight=False, soft_wrap=True)


def citations(cited: Sequence[Citation], question: str, *, heading: bool = True) -> None:
    """The numbered citation list: title, uri, database, pages and the cited excerpt."""
    if not cited:
        return
    terms = render.query_terms(question)
    if heading:
        output.out.print()
        output.out.print("Citations", style="bold")
    for c in cited:
        head = Text(f"[{c.index}] ", style="bold")
        head.append(c.document_title or c.document_uri or c.document_id, style="cyan")
        if c.document_title and c.document_uri:
            head.append(f"  {c.document_uri}", style="dim")
        head.append(f"  [{c.database}]", style="magenta")
        if c.pages:
            head.append(f"  p. {', '.join(str(p) for p in c.pages)}", style="dim")
        output.out.print(head, soft_wrap=True)
        excerpt = Text("    " + render.excerpt(c.content, terms))
        excerpt.highlight_words(terms, style="bold yellow", case_sensitive=False)
        output.out.print(excerpt, soft_wrap=True)
