"""`haiku chat`: a conversation over the selected databases, saved as a session; `chat list`, `chat delete`.

`--list-sessions` and `--delete-session NAME` are the older spellings of the two subcommands, kept working.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from haiku_cli.cli import output, render
from haiku_cli.cli.options import (
    DATABASE_SET_IF_GIVEN,
    At,
    Filter,
    Json,
    ModelName,
    Rescope,
    SessionName,
    resolving_databases,
    workspace,
)
from haiku_cli.cli.running import add_command, boundary, run, taking_global_options
from haiku_cli.errors import InputError

if TYPE_CHECKING:
    from haiku_cli.api import Selection


class _Group(TyperGroup):
    """`haiku chat`'s group: its first help sentence shown whole in `haiku --help`, as commands' are."""

    def get_short_help_str(self, limit: int = 45) -> str:
        """The first sentence of the help, whole."""
        first = " ".join((self.short_help or self.help or "").split("\n\n")[0].split())
        return re.split(r"(?<=\.)\s", first, maxsplit=1)[0]


def _session_names(incomplete: str) -> list[str]:
    """Saved session names for shell completion (`chat delete NAME`, `--session NAME`)."""
    from haiku_cli.api import SessionStore

    try:
        return sorted(s.name for s in SessionStore().summaries().sessions if s.name.startswith(incomplete))
    except Exception:  # completion must never print a traceback into the user's shell
        return []


SavedName = Annotated[
    str,
    typer.Argument(help="The saved session's name.", metavar="NAME", autocompletion=_session_names),
]


def register(app: typer.Typer) -> None:
    """Add `haiku chat` (a conversation) and `haiku chat list|delete` to the app."""
    chat_app = typer.Typer(
        cls=_Group,
        context_settings={"help_option_names": ["-h", "--help"]},
        subcommand_metavar="[list | delete NAME]",
    )
    chat_app.callback(invoke_without_command=True)(boundary(taking_global_options(resolving_databases(chat))))
    add_command(chat_app, "list", list_)
    add_command(chat_app, "delete", delete)
    app.add_typer(chat_app, name="chat")


def list_(json: Json = False) -> None:
    """List saved sessions, most recently used first.

    Examples:

    \b
      haiku chat list
      haiku chat list --json
      haiku chat --session NAME      continue one of them
    """
    _list_sessions(json)


def delete(name: SavedName) -> None:
    """Delete a saved session (the only command that does).

    Examples:

    \b
      haiku chat delete chat-20250101-120000
      haiku chat list                 to find the name
    """
    _delete_session(name)


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
    list_sessions: Annotated[bool, typer.Option("--list-sessions", help="Same as haiku chat list.")] = False,
    delete_session: Annotated[
        str | None,
        typer.Option(
            "--delete-session",
            help="Same as haiku chat delete NAME.",
            metavar="NAME",
            autocompletion=_session_names,
        ),
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
      haiku chat -d notes                   a new conversation over one database
      haiku chat --session thesis           continue (or start) a named one
      haiku chat < questions.txt            each line a question, answered in turn
      haiku chat list                       saved sessions (--json for JSON)
      haiku chat delete thesis              the only way a session is deleted
    """
    if ctx.invoked_subcommand is not None:
        _only_subcommand(ctx.invoked_subcommand, locals())
        return
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


def _only_subcommand(name: str, given: dict[str, Any]) -> None:
    """`haiku chat OPTION list`: a conversation's option does nothing for a subcommand, so say so."""
    flags = {
        "--session": given["session"] is not None,
        _chosen_with(given["chosen"]): given["chosen"] is not None,
        "--filter": given["filter_"] is not None,
        "--model": given["model"] is not None,
        "--analysis": given["analysis"],
        "--rescope": given["rescope"],
        "--list-sessions": given["list_sessions"],
        "--delete-session": given["delete_session"] is not None,
        "--json": given["json"],
        "--at": given["at"] is not None,
    }
    if extra := [option for option, on in flags.items() if on]:
        raise InputError(
            f"haiku chat {name} takes its options after its name; drop {' and '.join(extra)} before '{name}'"
        )


def _chosen_with(chosen: Selection | None) -> str:
    """The option that chose the databases, `--database` or `--db`, to name it in an error."""
    chosen_by = chosen.locations[0].chosen_by if chosen is not None else ""
    return chosen_by.split(" ")[0] or "--database"


def _list_sessions(json: bool) -> None:
    """`chat list` (`--list-sessions`): the saved sessions, most recent first."""
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
    """`chat delete NAME` (`--delete-session NAME`)."""
    from haiku_cli.api import SessionStore

    SessionStore().delete(name)
    output.err.print(f"deleted session {name}", markup=False, style="dim")
