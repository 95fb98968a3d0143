"""The databases a question is scoped to, kept in state as plain sources and turned back into a selection."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from haiku_cli.capabilities.state import Source
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from haiku_cli.store.location import Location


def paths_of(ws: Workspace, selection: Selection) -> tuple[str, ...]:
    """The selection's databases that are not configured by name: what a host must allow by path."""
    return tuple(s.path for s in sources_of(ws, selection) if s.path is not None)


def sources_of(ws: Workspace, selection: Selection) -> list[Source]:
    """The selection as JSON-compatible sources: configured databases by name, others by path.

    Only names go into state for configured databases, so storage options (which may hold secrets) are
    re-read from the settings rather than persisted with the conversation.
    """
    return [
        Source(name=loc.name) if ws.locations.get(loc.name) == loc else Source(name=loc.name, path=loc.uri)
        for loc in selection.locations
    ]


def selection_of(
    ws: Workspace, sources: Sequence[Source], *, allowed_paths: Collection[str] = ()
) -> Selection:
    """The selection the sources name; no sources means every configured database.

    Sources come from carried state, which is data from outside: a database named by path is opened only
    if the host listed that path in `allowed_paths` (configured databases are always allowed).
    """
    if not sources:
        return ws.select_many()
    locations = []
    for src in sources:
        if src.path is None:
            locations.append(ws.lookup(src.name))
        elif src.path in allowed_paths:
            locations.append(Location(src.name, src.path))
        else:
            raise InputError(
                f"database path '{src.path}' in the question's state is not one this host allows; "
                "pass it in allowed_paths, or name a configured database"
            )
    return Selection(tuple(locations))
