"""Which database of the configured set holds a document or chunk named without `--database`.

An id copied from a search over the whole set names one database's document; `get`, `delete`, `pictures`
and `visualize` find that database rather than ask the user to choose. Two databases holding it are
named, not guessed between.
"""

from __future__ import annotations

from haiku_cli.databases import references
from haiku_cli.databases.reading import read_each
from haiku_cli.databases.selection import searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError, echoed
from haiku_cli.store.database import Database
from haiku_cli.store.location import Location


async def database_holding(ws: Workspace, reference: str) -> Location:
    """The one configured database holding a document or chunk `reference` names (as `get` takes it)."""
    selection, _ = searchable(ws.select_many())

    async def holds(db: Database) -> bool:
        location = db.location
        try:
            await references.resolve(db, location, reference)
            return True
        except references.NotFound:
            pass
        try:
            await references.chunk(db, location, reference)
            return True
        except references.NotFound:
            return False

    found = await read_each(ws.pool, selection, holds)
    holding = [loc for loc, held in zip(selection.locations, found, strict=True) if held]
    if len(holding) == 1:
        return holding[0]
    names = ", ".join(loc.name for loc in (holding or selection.locations))
    if holding:
        raise InputError(
            f"'{echoed(reference.strip())}' names something in several databases ({names}); "
            "choose one with --database NAME or --db PATH"
        )
    raise InputError(
        f"no document or chunk with id, id prefix, uri or path '{echoed(reference.strip())}' in any "
        f"configured database ({names})"
    )
