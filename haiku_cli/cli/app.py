"""The `haiku` entry point and the typer application: global options and command registration.

The application is built on first use (`app`, `build_app`): a read command that a running `haiku daemon`
answers imports neither typer, rich, pydantic nor LanceDB in the calling process.
"""

# No `from __future__ import annotations`: the global options' annotations below are evaluated where
# they are defined, inside `build_app`, since typer reads them and the names are local to it.
import functools
import gc
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer


@functools.cache
def build_app() -> "typer.Typer":
    """The typer application with every command registered (built once per process)."""
    from pathlib import Path
    from typing import Annotated

    import typer

    from haiku_cli import __version__
    from haiku_cli.cli.running import set_debug

    app = typer.Typer(
        cls=_commands_group(),
        name="haiku",
        help="Local-first RAG for the terminal: add documents, then search, ask and analyze them.",
        context_settings={"help_option_names": ["-h", "--help"]},
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        epilog=(
            "Examples:\n\n\b\n"
            "  haiku add-src ~/papers/ notes.md         add files, folders, URLs\n"
            '  haiku search "sparse retrieval" --files  one line per document\n'
            "  haiku get 3f2b8c1e                       by short id, uri or path\n"
            "  haiku list --filter \"metadata.year = '2024'\"\n"
            '  haiku ask "What does the thesis say?" --model openai:gpt-4o\n'
            "  haiku chat -d notes                      a saved conversation\n\n"
            "haiku COMMAND --help shows a command's options; haiku help lists the documentation's topics."
        ),
    )

    def version_option(value: bool) -> None:
        if value:
            typer.echo(f"haiku {__version__}")
            raise typer.Exit()

    @app.callback()
    def _global(
        ctx: typer.Context,
        config: Annotated[
            Path | None,
            typer.Option(
                "--config",
                help="Config file (default: $HAIKU_CONFIG, else config.toml in $HAIKU_CONFIG_DIR or the "
                "user config dir).",
            ),
        ] = None,
        debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
        version: Annotated[
            bool,
            typer.Option("--version", callback=version_option, is_eager=True, help="Print the version."),
        ] = False,
    ) -> None:
        """Local-first RAG for the terminal."""
        set_debug(debug)
        ctx.obj = {"config": config}

    return app


# Each command, in the order `haiku --help` lists them, and the module of cli/ that registers it. A
# command's module is imported when that command runs (or when help lists them all), so `haiku search`
# loads neither `ask`, `serve` nor the write commands' modules.
COMMANDS: dict[str, str] = {
    "add": "ingest_commands",
    "add-src": "ingest_commands",
    "sources": "source_commands",
    "forget-src": "source_commands",
    "sync": "source_commands",
    "watch": "source_commands",
    "search": "search_command",
    "ask": "ask_command",
    "chat": "chat_command",
    "analyze": "analyze_command",
    "eval": "eval_command",
    "list": "admin_commands",
    "get": "admin_commands",
    "delete": "admin_commands",
    "info": "admin_commands",
    "vacuum": "admin_commands",
    "rebuild": "admin_commands",
    "history": "admin_commands",
    "pictures": "picture_commands",
    "visualize": "picture_commands",
    "config": "config_commands",
    "databases": "config_commands",
    "mcp": "mcp_command",
    "serve": "serve_command",
    "tag": "tag_commands",
    "publish": "publish_command",
    "doctor": "doctor_command",
    "daemon": "daemon_command",
    "help": "help_command",
}


def _commands_group() -> type:
    """The root command group: it knows every command's name and loads a command's module on first use."""
    import importlib

    import typer
    from typer.core import TyperGroup

    from haiku_cli.cli.coercion import defer_coercion

    class Commands(TyperGroup):
        def get_params(self, ctx: Any) -> list[Any]:
            params = super().get_params(ctx)  # typer's completion options are made here, each time
            defer_coercion(params)
            return params

        def list_commands(self, ctx: Any) -> list[str]:
            return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            if cmd_name not in self.commands and cmd_name in COMMANDS:
                module = importlib.import_module(f"haiku_cli.cli.{COMMANDS[cmd_name]}")
                # Registered on an app of their own, as the root app would have them, then adopted.
                registered = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)
                module.register(registered)
                group = typer.main.get_group(registered)
                for name, command in group.commands.items():
                    self.commands.setdefault(name, command)
            return self.commands.get(cmd_name)

    return Commands


def __getattr__(name: str) -> Any:
    # `from haiku_cli.cli.app import app` (tests, host programs) builds the application then.
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PYDANTIC_PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"

# How many new objects start a young garbage collection in the `haiku` process (Python's default: 700).
YOUNG_COLLECTION = 7000


def refuse_closed_streams() -> None:
    """Stop before any work when the caller closed standard output (`haiku search x >&-`): the output
    has nowhere to go, so it is exit 74 with one line, not a traceback or a write nobody sees reported."""
    if sys.stderr is None:  # nowhere to say anything: the command still runs and its exit code speaks
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (open until the process ends)
    if sys.stdout is None:
        from haiku_cli.errors import ExitCode

        print("haiku: cannot write the output: standard output is closed", file=sys.stderr)
        sys.exit(ExitCode.OUTPUT)


def main() -> None:
    """Console-script entry point: a read command goes to a running `haiku daemon` when one answers."""
    from haiku_cli.cli.daemon_client import forward

    refuse_closed_streams()
    code = forward(sys.argv)
    if code is not None:
        sys.exit(code)
    from haiku_cli.cli.daemon_start import start_if_absent

    start_if_absent(sys.argv)  # this command still runs here; the next ones go to it
    # pydantic looks for plugins when it builds its first model: importlib.metadata, then every installed
    # distribution's entry points read (~0.04 CPU-seconds, 7% of a search). haiku's models use none;
    # a value the user set is kept.
    os.environ.setdefault(PYDANTIC_PLUGINS_ENV, "__all__")
    # A command's start builds a few hundred thousand objects that live until exit (pydantic, numpy,
    # pyarrow, LanceDB). With a young collection every 700 new objects, the older generations'
    # collections, which walk all of them, run many times: about 0.035 of a search's 0.48 CPU-seconds.
    # Every 7,000 makes every collection ten times rarer; cyclic garbage is still freed, a little later.
    young, *older = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_COLLECTION), *older)
    try:
        build_app()()
    except SystemExit as stop:
        _leave_if_gave_up(stop.code)
        raise
    finally:
        # The process ends next. Its final garbage collections would walk every object the imports made
        # (typer, pydantic, numpy, pyarrow, LanceDB: ~0.08 CPU-seconds, 15% of a search) to free memory
        # the OS takes back anyway. Frozen objects are still freed by reference counting; atexit handlers
        # and `weakref.finalize` callbacks still run. haiku's own files are written and closed (LanceDB
        # commits, `write_text`) before a command returns, so nothing waits on a collection to be flushed.
        gc.freeze()


def _leave_if_gave_up(code: object) -> None:
    """After a command that gave up on a call to a store, end the process with its exit code without the
    interpreter's shutdown, which that call could abort (store/abandoned.py, `leave`)."""
    # Looked up, not imported: the store's modules load LanceDB, and a process that never loaded them
    # never gave up on a call.
    abandoned = sys.modules.get("haiku_cli.store.abandoned")
    if abandoned is not None and abandoned.gave_up():
        abandoned.leave(exit_status(code))


def exit_status(code: object) -> int:
    """The exit status of `sys.exit(code)`, as the interpreter reads it: None is 0, an int itself, anything
    else is printed to stderr and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
