"""The databases a question covers: the host's scope, which carried state may narrow but never widen.

The host chooses the databases (a capability's `scope`, kept out of the carried state); the state a
conversation carries (`EvidenceState.sources`, which a browser or a session file can rewrite) may only
pick some of them. Anything outside is refused with a `ScopeError`, never clamped silently.
"""

from __future__ import annotations

from collections.abc import Sequence

from haiku_cli.capabilities.state import Source
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from haiku_cli.store.location import Location


class ScopeError(InputError):
    """Carried state asked for a database (or a filter) outside the scope the host chose."""


def sources_of(ws: Workspace, selection: Selection) -> list[Source]:
    """The selection as JSON-compatible sources: configured databases by name, others by path.

    Only names go into state for configured databases, so storage options (which may hold secrets) are
    re-read from the settings rather than persisted with the conversation.
    """
    return [
        Source(name=loc.name) if ws.locations.get(loc.name) == loc else Source(name=loc.name, path=loc.uri)
        for loc in selection.locations
    ]


def host_selection(ws: Workspace, scope: Sequence[Source]) -> Selection:
    """The databases a host chose: configured ones by name, others by path; none means every configured one.

    Only the host's own sources reach here, so a database given by path is trusted: the host named it.
    """
    if not scope:
        return ws.select_many()
    return Selection(tuple(ws.lookup(s.name) if s.path is None else Location(s.name, s.path) for s in scope))


def question_selection(ws: Workspace, scope: Sequence[Source], carried: Sequence[Source]) -> Selection:
    """The databases a question covers: the host's `scope`, narrowed to the `carried` sources if any.

    A carried source must be one of the host's databases, the same way: a configured name the host
    allows, or exactly a path the host gave. Anything else is a `ScopeError` naming it.
    """
    allowed = host_selection(ws, scope)
    if not carried:
        return allowed
    by_source = {
        (s.name, s.path): loc for s, loc in zip(sources_of(ws, allowed), allowed.locations, strict=True)
    }
    chosen: dict[str, Location] = {}
    for src in carried:
        loc = by_source.get((src.name, src.path))
        if loc is None:
            what = f"database '{src.name}'" + (f" at '{src.path}'" if src.path is not None else "")
            raise ScopeError(
                f"the question's state asks for the {what}, outside this host's databases "
                f"({', '.join(allowed.names)}): carried state may narrow the host's scope, never widen it"
            )
        chosen[loc.name] = loc
    return Selection(tuple(chosen.values()))


def question_filter(host: str | None, carried: str | None) -> str | None:
    """The document filter a question uses: the host's, which carried state may repeat but not replace."""
    if host is None or carried is None or carried == host:
        return host if host is not None else carried
    raise ScopeError(
        f"the question's state asks for the document filter {carried!r}, but this host filters by "
        f"{host!r}: carried state cannot replace the host's filter"
    )
