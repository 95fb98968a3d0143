"""The terminal side of `haiku chat`: the line editor, streamed Markdown answers, slash commands, Ctrl-C.

Without a terminal it reads one question per line and prints plain answers, so `haiku chat < file` works.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from haiku_cli.cli import output, render
from haiku_cli.cli.running import fail
from haiku_cli.errors import ExitCode, HaikuError

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from haiku_cli.api import AskResult, ChatHost, Selection, Session, Workspace

HELP = """\
/help       this list
/sources    the databases this conversation covers
/citations  everything cited so far, by question
/clear      start a new session over the same databases (this one is kept)
/exit       leave (or Ctrl-D)
exit, quit, clear and help typed alone are the commands too.
Esc Enter inserts a new line; Ctrl-C cancels an answer in progress."""

PROMPT = "> "
# Typed alone, these words are what a user means by them, not questions to the model.
BARE_COMMANDS = frozenset({"exit", "quit", "clear", "help"})


def as_command(line: str) -> str | None:
    """The slash command a line is (`/help`, or `help` typed alone), else None: a question."""
    if line.startswith("/"):
        return line
    return "/" + line.lower() if line.lower() in BARE_COMMANDS else None


async def converse(
    ws: Workspace,
    selection: Selection | None,
    *,
    session: str | None,
    model: str | Model | None,
    document_filter: str | None,
    analysis: bool,
    rescope: bool,
    interactive: bool,
) -> int:
    """Open the session and answer questions until the input ends; returns the exit code."""
    from haiku_cli.api import ChatHost

    host = await ChatHost.open(
        ws,
        selection,
        session=session,
        model=model,
        document_filter=document_filter,
        analysis=analysis,
        rescope=rescope,
    )
    try:
        if interactive:
            await _terminal(host)
            return ExitCode.OK
        return await _lines(host)
    finally:
        host.close()
        _say(_where_saved(host))


def _where_saved(host: ChatHost) -> str:
    """The last line: where the conversation is saved, read back from its file (never claimed otherwise).

    After `/clear`, the session left without a question is not kept: the line names the last answered
    one `/clear` kept instead.
    """
    for session in (host.session, *reversed(host.kept)):
        try:
            saved = host.store.load(session.name) if host.store.exists(session.name) else None
        except HaikuError:
            saved = None
        if saved is not None and saved.turns:
            asked = f"{len(saved.turns)} question{'s' if len(saved.turns) != 1 else ''}"
            return (
                f"session {saved.name} is saved in {host.store.path(saved.name)} ({asked}); "
                f"continue it with {saved.resume_command()}"
            )
    return "no question was answered; no session was saved"


async def _terminal(host: ChatHost) -> None:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    from haiku_cli.config.paths import sessions_dir

    keys = KeyBindings()

    @keys.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    sessions_dir().mkdir(parents=True, exist_ok=True)
    history = FileHistory(str(sessions_dir() / "history"))
    prompt: PromptSession[str] = PromptSession(history=history, key_bindings=keys)
    _banner(host)
    noted: set[str] = set()
    while True:
        try:
            line = await prompt.prompt_async(PROMPT)
        except KeyboardInterrupt:
            continue  # Ctrl-C at the prompt clears the line
        except EOFError:
            return
        question = line.strip()
        if not question:
            continue
        if command := as_command(question):
            if _command(host, command):
                return
            continue
        await _answer_live(host, question, noted)


async def _lines(host: ChatHost) -> int:
    code = ExitCode.OK
    noted: set[str] = set()
    while True:
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line:
            return code
        question = line.strip()
        if not question:
            continue
        if command := as_command(question):
            if _command(host, command):
                return code
            continue
        # Echoed, so a transcript of `haiku chat < questions.txt` shows what each answer answers.
        output.out.print(f"{PROMPT}{question}", markup=False, highlight=False, soft_wrap=True)
        try:
            result = await _cancellable(host, question, None)
        except HaikuError as exc:
            _error(exc)
            code = exc.exit_code
            continue
        if result is None:
            output.error("cancelled")
            continue
        _not_created(result, noted)
        output.out.print(result.answer, markup=False, highlight=False, soft_wrap=True)
        render.citations(result.citations, question)
        render.grounding_notice(result)
        output.out.print()


def _not_created(result: AskResult, noted: set[str]) -> None:
    # Said once per conversation, not after every answer.
    render.not_created([name for name in result.not_created if name not in noted])
    noted.update(result.not_created)


async def _answer_live(host: ChatHost, question: str, noted: set[str]) -> None:
    with Live(console=output.out, refresh_per_second=12, vertical_overflow="visible") as live:

        def show(text: str) -> None:
            live.update(Markdown(text))

        try:
            result = await _cancellable(host, question, show)
        except HaikuError as exc:
            live.update(Text(""))
            live.stop()
            _error(exc)
            return
        if result is None:
            live.stop()
            output.err.print("(cancelled)", style="dim")
            return
        # The final answer replaces whatever was streamed (markers numbered, a redirected draft gone).
        live.update(Markdown(result.answer))
    _not_created(result, noted)
    render.citations(result.citations, question)
    render.grounding_notice(result)
    output.out.print()


async def _cancellable(
    host: ChatHost, question: str, on_text: Callable[[str], None] | None
) -> AskResult | None:
    """Answer, or return None if Ctrl-C arrived first (the session is then unchanged)."""
    result: AskResult | None = None
    failure: HaikuError | None = None
    async with anyio.create_task_group() as tg:

        async def watch_ctrl_c() -> None:
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch_ctrl_c)
        try:
            result = await host.ask(question, on_text)
        except HaikuError as exc:
            failure = exc  # raised below, not from inside the group (which would wrap it in a group)
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


def _command(host: ChatHost, line: str) -> bool:
    """Run a slash command; True means leave."""
    name = line.split()[0].lower()
    if name in ("/exit", "/quit"):
        return True
    if name == "/help":
        output.out.print(HELP, markup=False, highlight=False)
    elif name == "/sources":
        for loc in host.selection.locations:
            line_ = Text(loc.name, style="magenta")
            line_.append(f"  {loc.uri}", style="dim")
            output.out.print(line_, soft_wrap=True)
        if host.session.document_filter:
            output.out.print(f"filter: {host.session.document_filter}", markup=False, highlight=False)
    elif name == "/citations":
        cited = [(n, t) for n, t in enumerate(host.session.turns, start=1) if t.citations]
        if not cited:
            output.out.print("nothing cited yet", style="dim")
        for n, turn in cited:
            head = Text(f"Q{n}: ", style="bold")
            head.append(turn.question)
            output.out.print(head, soft_wrap=True)
            render.citations(turn.citations, turn.question, heading=False)
            output.out.print()
    elif name == "/clear":
        try:
            kept = host.clear()
        except HaikuError as exc:
            _error(exc)
        else:
            _say(_cleared(host, kept))
    else:
        output.error(f"unknown command {name}; /help lists the commands")
    return False


def _cleared(host: ChatHost, kept: Session | None) -> str:
    """What `/clear` did: which session goes on, and how to resume the one it left (kept whole)."""
    if kept is None:
        return f"new conversation (nothing was asked yet in session {host.session.name})"
    asked = f"{len(kept.turns)} question{'s' if len(kept.turns) != 1 else ''}"
    return (
        f"new conversation in session {host.session.name}; session {kept.name} ({asked}) is kept: "
        f"resume it with {kept.resume_command()}"
    )


def _say(line: str) -> None:
    output.err.print(line, style="dim", markup=False, highlight=False)


def _banner(host: ChatHost) -> None:
    s = host.session
    resumed = f", {len(s.turns)} earlier question{'s' if len(s.turns) != 1 else ''}" if s.turns else ""
    output.err.print(
        f"session {s.name}{resumed}, saved after each answer in {host.store.path(s.name)} · "
        f"{', '.join(host.selection.names)} · {host.label} · /help for commands, exit or Ctrl-D to leave",
        style="dim",
        markup=False,
        highlight=False,
    )


def _error(exc: HaikuError) -> None:
    fail(exc)  # the same one-line report as the command boundary, and the conversation goes on
