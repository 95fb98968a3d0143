"""The databases a question is scoped to, kept in state as plain sources and turned back into a selection."""

from __future__ import annotations

from collections.abc import Sequence

from haiku_cli.capabilities.state import Source
from haiku_cli.databases.selection import Selection, configured
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from haiku_cli.store.location import Location


def sources_of(ws: Workspace, selection: Selection) -> list[Source]:
    """The selection as JSON-compatible sources: configured databases by name, others by path.

    Only names go into state for configured databases, so storage options (which may hold secrets) are
    re-read from the settings rather than persisted with the conversation.
    """
    known = configured(ws.settings)
    return [
        Source(name=loc.name) if known.get(loc.name) == loc else Source(name=loc.name, path=loc.uri)
        for loc in selection.locations
    ]


def selection_of(ws: Workspace, sources: Sequence[Source]) -> Selection:
    """The selection the sources name; no sources means every configured database."""
    if not sources:
        return ws.select_many()
    known = configured(ws.settings)
    locations = []
    for src in sources:
        if src.path is not None:
            locations.append(Location(src.name, src.path))
        elif src.name in known:
            locations.append(known[src.name])
        else:
            raise InputError(f"unknown database '{src.name}'; configured databases: {', '.join(known)}")
    return Selection(tuple(locations))
