"""`haiku chat`: a conversation over the selected databases, saved as a session; list and delete them."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output, render
from haiku_cli.cli.options import (
    DATABASE_SET_IF_GIVEN,
    At,
    Filter,
    ModelName,
    Rescope,
    SessionName,
    workspace,
)
from haiku_cli.cli.running import add_command, run
from haiku_cli.errors import InputError

if TYPE_CHECKING:
    from haiku_cli.api import Selection


def register(app: typer.Typer) -> None:
    """Add the chat command to the app."""
    add_command(app, "chat", chat)


def chat(
    ctx: typer.Context,
    chosen: Selection | None = DATABASE_SET_IF_GIVEN,
    filter_: Filter = None,
    model: ModelName = None,
    session: SessionName = None,
    analysis: Annotated[
        bool, typer.Option("--analysis", help="Let the model also run Python over the documents.")
    ] = False,
    rescope: Rescope = False,
    list_sessions: Annotated[
        bool, typer.Option("--list-sessions", help="List saved sessions, most recent first.")
    ] = False,
    delete_session: Annotated[
        str | None, typer.Option("--delete-session", help="Delete a saved session.", metavar="NAME")
    ] = None,
    json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="With --list-sessions: print the list as JSON. "
            "(Answers in JSON: haiku ask --session NAME --json.)",
        ),
    ] = False,
    at: At = None,
) -> None:
    """Talk with your documents: answers streamed with citations, follow-ups, saved sessions.

    In a terminal: a line editor with history (Esc Enter for a new line), /help for commands, Ctrl-C
    cancels an answer, Ctrl-D exits. Otherwise one question per line from stdin, answered in turn.

    Examples:

    \b
      haiku chat                     a new conversation, saved after each answer
      haiku chat -d notes --session thesis
      haiku chat < questions.txt     one question per line
    """
    if list_sessions or delete_session is not None:
        given = {
            "--list-sessions": list_sessions and delete_session is not None,
            "--session": session is not None,
            _chosen_with(chosen): chosen is not None,
            "--filter": filter_ is not None,
            "--model": model is not None,
            "--analysis": analysis,
            "--rescope": rescope,
            "--json": json and not list_sessions,
            "--at": at is not None,
        }
        # A conversation's options do nothing here: say so rather than list or delete as if they did.
        if extra := [option for option, on in given.items() if on]:
            command = "--list-sessions" if list_sessions and delete_session is None else "--delete-session"
            raise InputError(f"{command} takes no other option; drop {' and '.join(extra)}")
        if delete_session is None:
            _list_sessions(json)
        else:
            _delete_session(delete_session)
        return
    if json:
        raise InputError(
            "--json goes with --list-sessions; for JSON answers use haiku ask --session NAME --json"
        )
    from haiku_cli.cli.chat_ui import converse

    ws = workspace(ctx)
    ws.read_at(at)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    code = run(
        lambda: converse(
            ws,
            chosen,
            session=session,
            model=model,
            document_filter=filter_,
            analysis=analysis,
            rescope=rescope,
            interactive=interactive,
        )
    )
    if code:
        raise typer.Exit(code)


def _chosen_with(chosen: Selection | None) -> str:
    """The option that chose the databases, `--database` or `--db`, to name it in an error."""
    chosen_by = chosen.locations[0].chosen_by if chosen is not None else ""
    return chosen_by.split(" ")[0] or "--database"


def _list_sessions(json: bool) -> None:
    """`--list-sessions`: the saved sessions, most recent first."""
    from haiku_cli.api import SessionStore

    listed = SessionStore().summaries()
    if json:
        output.print_model(listed)
    elif not listed.sessions:
        output.out.print("no saved sessions", style="dim")
    else:
        render.table(
            ["name", "questions", "databases", "updated"],
            [
                (s.name, s.questions, ", ".join(s.databases), s.updated_at.strftime("%Y-%m-%d %H:%M"))
                for s in listed.sessions
            ],
        )


def _delete_session(name: str) -> None:
    """`--delete-session NAME`."""
    from haiku_cli.api import SessionStore

    SessionStore().delete(name)
    output.err.print(f"deleted session {name}", markup=False, style="dim")
