"""Options shared by several commands, so every command spells them the same way."""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

if TYPE_CHECKING:
    from haiku_cli.api import Location, Selection, Workspace


def _database_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion: the configured database names (nothing when the config cannot be read)."""
    from haiku_cli.api import Workspace
    from haiku_cli.errors import HaikuError

    config = (ctx.find_root().params or {}).get("config")
    try:
        known = Workspace.load(config).locations
    except HaikuError:
        return []
    return [name for name in known if name.startswith(incomplete)]


def completing(*values: str) -> Callable[[str], list[str]]:
    """Shell completion for an option taking one of `values`."""

    def complete(incomplete: str) -> list[str]:
        return [v for v in values if v.startswith(incomplete.lower())]

    return complete


def _database_option(help_text: str) -> Any:
    return Annotated[
        list[str] | None,
        typer.Option("--database", "-d", help=help_text, metavar="NAME", autocompletion=_database_names),
    ]


# A set's commands take the option repeated; a one-database command's help says one.
DatabaseNames = _database_option("A configured database by name (repeatable).")
DatabaseName = _database_option("The configured database to work on, by name.")
DatabasePaths = Annotated[
    list[Path] | None,
    # Not checked for readability here: an unreadable database is a database failure (exit 3), said once.
    typer.Option(
        "--db",
        help="A database by path; it is named after its folder's stem.",
        metavar="PATH",
        readable=False,
    ),
]
ModelName = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Model string, e.g. openai:gpt-4o or openai-chat:NAME (default: config).",
        metavar="MODEL",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text (shapes: haiku help json).")]
Filter = Annotated[
    str | None,
    typer.Option(
        "--filter",
        help="SQL condition over document fields: uri, title, metadata.KEY, created_at (ISO dates), e.g. "
        "\"metadata.year = '2024'\" (haiku help search).",
        metavar="SQL",
    ),
]
AllDatabases = Annotated[
    bool,
    typer.Option("--all", help="Every configured database that is not read_only (instead of -d/--db)."),
]
SyncFirst = Annotated[
    bool,
    typer.Option(
        "--sync",
        help="First sync the remembered sources whose files changed or vanished (read_only databases "
        "are searched as they are).",
    ),
]
SyncBeforeSearch = Annotated[
    bool,
    typer.Option(
        "--sync-before-search",
        help="Before each search, sync the remembered sources whose files changed, as search --sync does "
        "(the server then writes; read_only databases are searched as they are).",
    ),
]
CheckRemote = Annotated[
    bool,
    typer.Option(
        "--check-remote",
        help="Ask URLs and s3:// objects whether they changed since read (one request each, bounded by "
        "[storage] timeout_seconds); only local files are looked at otherwise.",
    ),
]
At = Annotated[
    str | None,
    typer.Option(
        "--at",
        help="Read every database at this tag (haiku tag create), as it was then; nothing is written.",
        metavar="TAG",
    ),
]


def whole_number(value: str) -> int:
    """Parse a count option: typer's own wording for `--limit abc` is pydantic's ("Input should be ...")."""
    try:
        return int(value)
    except ValueError:
        raise typer.BadParameter(f"expected a whole number, got {value!r}") from None


def port_number(value: str) -> int:
    """Parse a TCP port (0 for any free one), in the same words as `whole_number`."""
    port = whole_number(value)
    if not 0 <= port <= 65535:
        raise typer.BadParameter(f"expected a port number from 0 to 65535, got {value!r}")
    return port


class Listening(NamedTuple):
    """`--host`, `--port` and `--allow-host`, as the commands that listen (`serve`, `mcp`) take them."""

    host: Any
    port: Any
    allow_host: Any


def listening(port: int, *, reached: str, when: str = "") -> Listening:
    """The listening options with a default `port`; `reached` names what a host reaches ("browsers ...
    the page") and `when` the flag they go with (" with --http"), so each command's help reads as its own."""
    return Listening(
        host=typer.Option(
            "127.0.0.1",
            "--host",
            help=f"Address to listen on{when} (127.0.0.1: reachable from this machine only).",
            metavar="HOST",
        ),
        port=typer.Option(
            port,
            "--port",
            parser=port_number,
            help=f"Port to listen on{when} (0: any free one).",
            metavar="PORT",
        ),
        allow_host=typer.Option(
            None, "--allow-host", help=f"Another host name {reached} (repeatable).", metavar="HOST"
        ),
    )


def warn_if_open(
    host: str, loopback: bool, names: Sequence[str], *, can: str, token: str | None, how: str
) -> None:
    """The one warning of a server (`mcp --http`, `serve`) that listens beyond this machine (not
    `loopback`) without a token: whoever reaches `host` `can` (read, ask questions over) the databases
    `names`; `how` sets a token."""
    from haiku_cli.cli import output

    if token is None and not loopback:
        output.error(
            f"warning: listening on {host}: anyone who can reach this address can {can} {', '.join(names)}; "
            f"set {how} to require a token"
        )


Limit = Annotated[
    int | None,
    typer.Option(
        "--limit",
        "-n",
        help="How many results (default: [search] limit, 10).",
        metavar="N",
        parser=whole_number,
    ),
]

SessionName = Annotated[
    str | None,
    typer.Option("--session", "-s", help="Continue (or start) the named saved session.", metavar="NAME"),
]
Rescope = Annotated[
    bool,
    typer.Option(
        "--rescope",
        help="Let a resumed session cover other databases (or another filter), or accept a session "
        "file whose databases were edited.",
    ),
]


def workspace(ctx: typer.Context) -> Workspace:
    """The workspace the app callback loaded (config read once per process)."""
    from haiku_cli.api import Workspace

    root = ctx.find_root()
    obj = root.obj or {}
    if "workspace" not in obj:
        from haiku_cli.cli import output

        notice = output.WaitNotice()
        ws = Workspace.load(
            obj.get("config"),
            on_write_wait=notice.start,
            on_write_waited=notice.end,
            on_write_note=output.note,
        )
        root.obj = {**obj, "workspace": ws}
    return root.obj["workspace"]


class Databases(enum.Enum):
    """Which databases `--database NAME` / `--db PATH` choose for a command.

    A command marks one parameter with a marker below as its default; `resolving_databases` puts both
    options in its place and hands the command what they resolve to.
    """

    SET = "set"  # search, ask, analyze, mcp: a Selection, every configured database unless narrowed
    SET_IF_GIVEN = "set if given"  # a session's question: a Selection, or None to keep the session's own
    ONE = "one"  # every other command: exactly one Location, refused rather than guessed
    # get, delete, pictures, visualize: as ONE, but with several databases configured and none chosen, the
    # one holding the document or chunk the command's first argument names (an id copied from a search)
    ONE_HOLDING = "one, or the one holding the reference"


# The markers a command writes as its parameter's default (typed Any, as `typer.Option(...)` defaults are,
# because the command receives the resolved value, not the marker).
DATABASE_SET: Any = Databases.SET
DATABASE_SET_IF_GIVEN: Any = Databases.SET_IF_GIVEN
ONE_DATABASE: Any = Databases.ONE
ONE_DATABASE_HOLDING: Any = Databases.ONE_HOLDING
_SETS = (Databases.SET, Databases.SET_IF_GIVEN)


def resolving_databases(command: Callable[..., None]) -> Callable[..., None]:
    """`command` taking `--database`/`--db` where its `Databases` parameter was, resolved once, here."""
    signature = inspect.signature(command)
    marked = [p for p in signature.parameters.values() if isinstance(p.default, Databases)]
    if not marked:
        return command
    (chosen,) = marked
    how: Databases = chosen.default
    if "ctx" not in signature.parameters:
        raise TypeError(f"{command.__name__} needs a ctx parameter to resolve its databases")
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        if param is chosen:
            kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
            params += [
                inspect.Parameter(
                    "database",
                    kind,
                    default=None,
                    annotation=DatabaseNames if how in _SETS else DatabaseName,
                ),
                inspect.Parameter("db", kind, default=None, annotation=DatabasePaths),
            ]
        else:
            # typer reads annotations as objects; this module's `from __future__` made them strings.
            annotation = param.annotation
            if isinstance(annotation, str):
                annotation = eval(annotation, command.__globals__)  # what inspect's eval_str does
            params.append(param.replace(annotation=annotation))

    # The reference a ONE_HOLDING command names: its first parameter after ctx.
    reference = next(p.name for p in signature.parameters.values() if p.name != "ctx")

    def resolve(kwargs: dict[str, Any]) -> None:
        names, paths = kwargs.pop("database") or [], kwargs.pop("db") or []
        ws = workspace(kwargs["ctx"])
        if how is Databases.ONE_HOLDING and not names and not paths and len(ws.locations) > 1:
            kwargs[chosen.name] = _holding(ws, kwargs[reference])
        else:
            kwargs[chosen.name] = _resolve(how, ws, names, paths)

    return with_parameters(command, params, resolve)


def with_parameters(
    command: Callable[..., None], params: list[inspect.Parameter], adapt: Callable[[dict[str, Any]], None]
) -> Callable[..., None]:
    """`command` as typer sees it with `params` (annotations as objects): `adapt` turns the arguments typer
    passes, by name, into the command's."""

    @functools.wraps(command)
    def wrapped(**kwargs: Any) -> None:
        adapt(kwargs)
        command(**kwargs)

    wrapped.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    wrapped.__annotations__ = {p.name: p.annotation for p in params}
    return wrapped


def _holding(ws: Workspace, reference: str) -> Location:
    import anyio

    from haiku_cli import api

    async def find() -> Location:
        return await api.database_holding(ws, reference)

    return anyio.run(find)


def _resolve(
    how: Databases, ws: Workspace, names: list[str], paths: list[Path]
) -> Selection | Location | None:
    if how in (Databases.ONE, Databases.ONE_HOLDING):
        return ws.select_one(names, paths)
    if how is Databases.SET_IF_GIVEN and not names and not paths:
        return None
    return ws.select_many(names, paths)


Engine = Annotated[
    str,
    typer.Option(
        "--engine",
        autocompletion=completing("local", "ray"),
        help="local, or ray: read, chunk and embed on a Ray cluster (pip install 'haiku-cli[ray]'), whose "
        "workers write new chunks as fragments this process commits.",
        case_sensitive=False,
        metavar="ENGINE",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="The Ray cluster for --engine ray (default: [ray] address, RAY_ADDRESS, or a local one).",
        metavar="ADDR",
    ),
]
