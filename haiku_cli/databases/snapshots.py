"""`haiku tag`: naming a database's (or every configured database's) current state, and going back to it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress

import anyio.to_thread
from pydantic import BaseModel

from haiku_cli.databases.operations import writable_databases
from haiku_cli.databases.reading import in_thread, read_one
from haiku_cli.databases.selection import Selection, searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import HaikuError, InputError
from haiku_cli.store import tags
from haiku_cli.store.adding import writing
from haiku_cli.store.database import Database
from haiku_cli.store.location import Location
from haiku_cli.store.tags import TagInfo


class DatabaseTag(BaseModel):
    """One database's tag, as `tag create`, `tag delete` and `tag restore` report it."""

    database: str
    tag: TagInfo


class TagList(BaseModel):
    """`haiku tag list`: a database's tags, oldest first."""

    database: str
    tags: list[TagInfo]


async def create_tag(ws: Workspace, location: Location, name: str) -> DatabaseTag:
    """`haiku tag create NAME`: tag every table of one database at its current version."""
    tags.check_name(name)
    return await _tag_write(ws, location, f"tag create {name}", lambda db: tags.create_tag(db, name))


async def create_tag_everywhere(ws: Workspace, name: str) -> list[DatabaseTag]:
    """`haiku tag create NAME --all`: the tag in every configured database that exists and is writable.

    All or none: a database that already has the tag, or cannot be tagged, leaves no database tagged.
    """
    tags.check_name(name)
    locations = writable_databases(ws)
    taken = [loc.name for loc in locations if await _has_tag(ws, loc, name)]
    if taken:
        raise InputError(f"tag '{name}' exists already in {', '.join(taken)}; delete it or pick another name")
    made: list[DatabaseTag] = []
    try:
        for loc in locations:
            made.append(await create_tag(ws, loc, name))
    except BaseException:
        for done in made:
            with suppress(HaikuError):
                await delete_tag(ws, ws.locations[done.database], name)
        raise
    return made


async def _has_tag(ws: Workspace, location: Location, name: str) -> bool:
    return any(t.name == name for t in (await list_tags(ws, location)).tags)


async def find_tag(ws: Workspace, location: Location, name: str) -> DatabaseTag:
    """One database's tag by name; a database that does not exist, or has no such tag, fails naming it."""
    tags.check_name(name)
    found = await read_one(ws.pool, location, in_thread(lambda db: tags.find_tag(db, name)))
    return DatabaseTag(database=location.name, tag=found)


async def check_tag(ws: Workspace, selection: Selection) -> None:
    """Open the selection's written databases at the tag `ws` reads at (`--at`), so that a database
    without it fails now, naming it, rather than at the first question a server is asked."""
    await ws.pool.clients_covering(searchable(selection)[0])


async def list_tags(ws: Workspace, location: Location) -> TagList:
    """`haiku tag list`: one database's tags, oldest first."""
    found = await read_one(ws.pool, location, in_thread(tags.list_tags))
    return TagList(database=location.name, tags=found)


async def delete_tag(ws: Workspace, location: Location, name: str) -> DatabaseTag:
    """`haiku tag delete NAME`: forget a tag; the versions only it kept go at the next cleanup."""
    return await _tag_write(ws, location, f"tag delete {name}", lambda db: tags.delete_tag(db, name))


async def restore_tag(ws: Workspace, location: Location, name: str) -> DatabaseTag:
    """`haiku tag restore NAME`: make the tagged state the latest, all-or-nothing (later tags stay)."""
    return await _tag_write(ws, location, f"tag restore {name}", lambda db: tags.restore_tag(db, name))


async def _tag_write(
    ws: Workspace, location: Location, operation: str, change: Callable[[Database], TagInfo]
) -> DatabaseTag:
    """Run one tag change under the writer lock (logged as `operation` when it moved a table)."""
    db = await ws.pool.open_one(location, writable=True)
    async with writing(db, operation):
        tag = await anyio.to_thread.run_sync(lambda: change(db))
    ws.pool.forget(location)  # a reader's handle would not see the tag's meta row
    return DatabaseTag(database=db.name, tag=tag)
