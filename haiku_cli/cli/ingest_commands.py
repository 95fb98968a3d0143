"""`haiku add` and `haiku add-src`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import ingest_render, interrupted, output
from haiku_cli.cli.options import ONE_DATABASE, Engine, Json, RayAddress, workspace
from haiku_cli.cli.running import add_command, chosen_engine, exit_with, run_to_a_stop
from haiku_cli.cli.stdin import read_text
from haiku_cli.errors import ExitCode

if TYPE_CHECKING:
    from haiku_cli.api import IngestReport, Location, WriteOutcome

Title = Annotated[str | None, typer.Option("--title", help="Title for the document.", metavar="TITLE")]
Meta = Annotated[
    list[str] | None,
    typer.Option(
        "--meta", help="Metadata KEY=VALUE (repeatable); replaces what is stored.", metavar="KEY=VALUE"
    ),
]

FollowSymlinks = Annotated[
    bool | None,
    typer.Option(
        "--follow-symlinks/--no-follow-symlinks",
        help="Add what symlinks lead to outside the folders given (skipped and reported otherwise); "
        "default: as the source is remembered, else off.",
        show_default=False,
    ),
]
Include = Annotated[
    list[str] | None,
    typer.Option(
        "--include",
        help="Add only the files of folders matching this glob (gitignore-style, repeatable); "
        "a matching file of another suffix is read as plain text.",
        metavar="GLOB",
    ),
]
Exclude = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude", help="Leave out files and folders matching this glob (repeatable).", metavar="GLOB"
    ),
]
Verbose = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="List each file left out (unsupported, ignored, excluded) and why."),
]


def register(app: typer.Typer) -> None:
    """Add the ingest commands to the app."""
    add_command(app, "add", add)
    add_command(app, "add-src", add_src)


def add(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The text to add; '-' reads standard input.", metavar="TEXT")],
    title: Title = None,
    meta: Meta = None,
    location: Location = ONE_DATABASE,
    json: Json = False,
) -> None:
    """Add a piece of text as a document.

    Examples:

    \b
      haiku add "Kestrels hover over fields." --title Kestrels
      cat notes.txt | haiku add - --meta source=notes
      haiku add "Meeting notes" -d work --json
    """
    from haiku_cli import api

    metadata = api.parse_metadata(meta or [])
    ws = workspace(ctx)
    if text == "-":
        text = read_text("-", what="the text to add", max_text_mb=ws.settings.ingest.max_text_mb)
    with interrupted.saying(interrupted.whole_line("add")):
        report = run_to_a_stop(lambda: api.add_text(ws, location, text, title=title, metadata=metadata))
    _report(report, json)


def add_src(
    ctx: typer.Context,
    sources: Annotated[
        list[str],
        typer.Argument(help="Files, directories (recursive), file:// and http(s) URLs.", metavar="SOURCE"),
    ],
    title: Title = None,
    meta: Meta = None,
    follow_symlinks: FollowSymlinks = None,
    include: Include = None,
    exclude: Exclude = None,
    verbose: Verbose = False,
    engine: Engine = "local",
    ray_address: RayAddress = None,
    location: Location = ONE_DATABASE,
    json: Json = False,
) -> None:
    """Add files, directories and URLs; unsupported or unreadable ones are reported and skipped.

    Examples:

    \b
      haiku add-src ~/papers/ notes.md        folders, files, URLs
      haiku add-src ~/code --include '*.md'   only Markdown of a folder
      haiku add-src https://example.org/guide.html -d web
    """
    from haiku_cli import api

    metadata = api.parse_metadata(meta or [])
    chosen = chosen_engine(ctx, engine, ray_address)
    ws = workspace(ctx)
    stayed: list[str] = []  # the engine's note that the add runs in this process after all

    def note(text: str) -> None:
        stayed.append(text)
        output.note(text)

    fragments = chosen == "ray" and ws.settings.ray.fragments
    said = interrupted.saying(lambda ended: _interrupted_add(ended, fragments and not stayed))
    with said, output.progress_bar(f"adding to {location.name}") as bar:
        report = run_to_a_stop(
            lambda: api.add_sources(
                ws,
                location,
                sources,
                title=title,
                metadata=metadata,
                progress=bar,
                follow_symlinks=follow_symlinks,
                include=include or (),
                exclude=exclude or (),
                engine=chosen,
                ray_address=ray_address,
                on_note=note,
            )
        )
    _report(report, json, verbose=verbose)


def _interrupted_add(ended: Sequence[WriteOutcome], on_cluster: bool) -> str:
    if on_cluster and not (ended and ended[-1].stored):
        # The workers' fragments are committed at the end of the add: before that, nothing is kept.
        return (
            "interrupted: an add on the Ray cluster commits its chunks at its end, so none of it is "
            "kept; run the same add-src again"
        )
    return interrupted.add_line(ended)


def _report(report: IngestReport, as_json: bool, *, verbose: bool = False) -> None:
    if as_json:
        output.print_model(report)
    else:
        ingest_render.ingest_report(report, verbose=verbose)
    if report.failed:
        # Nothing usable at all is bad input; some failures among successes is a partial batch.
        exit_with(ExitCode.INPUT if len(report.failed) == len(report.outcomes) else ExitCode.PARTIAL)
