"""The error boundary every command runs inside, and the bridge from a command to async library calls."""

from __future__ import annotations

import errno
import functools
import inspect
import os
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

import anyio
import typer
from typer.core import TyperArgument, TyperCommand

from haiku_cli.cli import output
from haiku_cli.cli.coercion import defer_coercion
from haiku_cli.cli.options import resolving_databases, with_parameters
from haiku_cli.errors import ExitCode, HaikuError, Hint

T = TypeVar("T")
P = ParamSpec("P")

_debug = False


def _framework_exceptions() -> tuple[type[BaseException], ...]:
    """How typer and the click it runs on stop a command (exit, abort, usage): these pass the boundary.

    typer 0.29 carries its own copy of click and older releases use the click package; either way the
    module that defines `typer.BadParameter` is the one whose exceptions typer raises, so this never
    imports the click package just to name its exceptions.
    """
    click_exceptions = sys.modules.get(typer.BadParameter.__module__)
    found: list[type[BaseException]] = [typer.Exit, typer.Abort, SystemExit]
    for name in ("Exit", "Abort", "ClickException"):
        cls = getattr(click_exceptions, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


_PASS_THROUGH = _framework_exceptions()


def usage_error(message: str, ctx: typer.Context) -> BaseException:
    """A malformed command line: exit 2 after the usage line, as typer reports a missing argument."""
    return sys.modules[typer.BadParameter.__module__].UsageError(message, ctx)


def set_debug(value: bool) -> None:
    """`--debug`: let tracebacks through."""
    global _debug
    _debug = value


def run(fn: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run an async library function to completion and return its result (errors go to the boundary)."""

    async def call() -> T:
        return await fn(*args, **kwargs)

    return anyio.run(call)


def boundary(command: Callable[P, None]) -> Callable[P, None]:
    """Wrap a whole command once: every failure becomes one line on stderr and a documented exit code.

    Everything inside counts: reading stdin, the library calls, rendering and writing the output.
    """

    @functools.wraps(command)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            command(*args, **kwargs)
            sys.stdout.flush()  # a full disk or a closed pipe shows here, not at interpreter exit
        except _PASS_THROUGH:
            raise
        except BaseException as exc:
            if _debug and not isinstance(exc, BrokenPipeError | KeyboardInterrupt):
                raise
            raise typer.Exit(int(fail(exc))) from None

    return wrapped


class _Command(TyperCommand):
    """A command whose help names arguments by their metavar alone (typer would add `<list[str]>`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument) and param.metavar:
                param.display_type_rich = _no_type  # type: ignore[method-assign]
            if isinstance(param, TyperArgument):
                # typer writes a required argument as `{DOC}` in the usage line; the convention is `DOC`.
                param.get_usage_pieces = functools.partial(_plain_usage, param)  # type: ignore[method-assign]

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)  # with the help option, made on first use
        defer_coercion(params)
        return params

    def get_short_help_str(self, limit: int = 45) -> str:
        """The first sentence of the help, whole: `haiku --help` wraps it rather than cut it at 45 chars."""
        first = " ".join((self.short_help or self.help or "").split("\n\n")[0].split())
        return re.split(r"(?<=\.)\s", first, maxsplit=1)[0]


def _no_type(ctx: Any) -> str | None:
    return None


def _plain_usage(param: TyperArgument, ctx: Any) -> list[str]:
    name = param.metavar or (param.name or "").upper()
    name = name if param.required else f"[{name}]"
    return [f"{name}..." if param.nargs != 1 else name]


# The `haiku help TOPIC` page each command module's commands are documented on (docs/TOPIC.md).
HELP_TOPICS = {
    "ingest_commands": "ingest",
    "source_commands": "watch",
    "search_command": "search",
    "eval_command": "eval",
    "admin_commands": "search",
    "picture_commands": "search",
    "ask_command": "ask",
    "analyze_command": "ask",
    "chat_command": "chat",
    "config_commands": "configuration",
    "tag_commands": "snapshots",
    "publish_command": "sharing",
    "doctor_command": "doctor",
    "daemon_command": "daemon",
    "mcp_command": "mcp",
    "serve_command": "web",
}


def add_command(app: typer.Typer, name: str, command: Callable[..., None]) -> None:
    """Register `command` as `haiku NAME`: its databases resolved, all of it inside the error boundary."""
    topic = HELP_TOPICS.get(command.__module__.rsplit(".", 1)[-1])
    epilog = f"More: haiku help {topic}" if topic else None
    app.command(name, cls=_Command, epilog=epilog)(
        boundary(taking_global_options(resolving_databases(command)))
    )


_DebugAfter = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
_ConfigAfter = Annotated[
    Path | None, typer.Option("--config", help="Config file (as haiku --config FILE).", metavar="FILE")
]


def taking_global_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command` also taking `--debug` and `--config` after its name, as `haiku --debug COMMAND` does."""
    signature = inspect.signature(command, eval_str=True)
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [
        *signature.parameters.values(),
        inspect.Parameter("debug_after", kind, default=False, annotation=_DebugAfter),
        inspect.Parameter("config_after", kind, default=None, annotation=_ConfigAfter),
    ]

    def take(kwargs: dict[str, Any]) -> None:
        debug, config = kwargs.pop("debug_after"), kwargs.pop("config_after")
        if debug:
            set_debug(True)
        if config is not None:  # read before the command loads its workspace
            root = kwargs["ctx"].find_root()
            root.obj = {**(root.obj or {}), "config": config}

    return with_parameters(command, params, take)


def fail(exc: BaseException) -> ExitCode:
    """Say what went wrong in one line on stderr (several for several databases); return the exit code."""
    if isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE):
        # The reader stopped reading (`| head`): that is how pipelines end, not an error.
        _silence_stdout()
        return ExitCode.OK
    if isinstance(exc, HaikuError):
        text = "\n".join(_message(part) + _hint(part.hint) for part in exc.each())
        for line in text.splitlines() or [type(exc).__name__]:
            output.error(line)
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        output.error("interrupted")
        return ExitCode.INTERRUPTED
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EBADF):
        _silence_stdout()
        output.error(f"cannot write the output: {exc.strerror or exc}")
        return ExitCode.OUTPUT
    output.error(f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    output.error("rerun with --debug for the traceback, and please report it")
    return ExitCode.INTERNAL


def _message(error: HaikuError) -> str:
    """The error's message, naming the argument it is about as its option (`limit` is `--limit`)."""
    message = str(error)
    if error.argument and message.startswith(error.argument):
        return "--" + error.argument.replace("_", "-") + message[len(error.argument) :]
    return message


def _hint(hint: Hint | None) -> str:
    """The next step as a command to run (the MCP server words the same hints as tool calls)."""
    if hint is None:
        return ""
    if hint.action == "page_documents":
        return "; to see every document, use haiku list"
    if hint.action == "choose_model":
        return ", or pass --model (e.g. --model openai:gpt-4o)"
    if hint.action == "fts_or_narrow":  # narrowed with the option that chose the set: --database or --db
        narrow_with = hint.chosen_by.split(" ")[0] or "--database"
        return f"; search them together with --type fts, or narrow the selection with {narrow_with}"
    option = f" {hint.chosen_by}" if hint.chosen_by else ""
    if hint.action == "list_documents":
        return f"; haiku list{option} shows the ids"
    if hint.action == "finish_upkeep":
        return f"; haiku vacuum{option} finishes it"
    return f"; add documents to it first (haiku add-src PATH{option})"


def _silence_stdout() -> None:
    # Output still buffered would fail again when Python flushes at exit; send it nowhere instead.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (tests capture output in memory): nothing to silence


def exit_with(code: ExitCode) -> None:
    """Leave with a documented exit code (no-op for success)."""
    if code != ExitCode.OK:
        raise typer.Exit(int(code))


def chosen_engine(ctx: typer.Context, engine: str, ray_address: str | None) -> Literal["local", "ray"]:
    """`--engine` checked (local or ray, --ray-address only with ray)."""
    chosen = engine.lower()
    if chosen not in ("local", "ray"):
        raise usage_error(f"--engine {engine!r}: use local or ray", ctx)
    if ray_address is not None and chosen != "ray":
        raise usage_error("--ray-address needs --engine ray", ctx)
    return "ray" if chosen == "ray" else "local"
