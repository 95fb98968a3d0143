"""A long-lived process keeps at most `[server] max_open_databases` databases open: the least recently
searched is closed, and searching it again opens it again with the same (and any newer) results."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from haiku_cli.config.settings import ServerSettings
from haiku_cli.databases import operations
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import DatabaseError
from haiku_cli.store import Location

pytestmark = pytest.mark.anyio

TEXTS = {
    "owls": ["Owls hunt at night over the meadow.", "An owl's feathers are silent in flight."],
    "tides": ["Tides follow the moon around the earth.", "Spring tides are the highest tides."],
    "bees": ["Bees dance to show where the flowers are.", "A hive of bees keeps one queen."],
}


@pytest.fixture
def databases(make_db) -> dict[str, Location]:
    return {name: make_db(name, texts)[0] for name, texts in TEXTS.items()}


def _capped(workspace, limit: int) -> Workspace:
    ws = workspace()
    return ws.derived(ws.settings.model_copy(update={"server": ServerSettings(max_open_databases=limit)}))


async def _found(ws: Workspace, locations: list[Location], query: str) -> list[tuple[str, str]]:
    hits = await operations.search_hits(ws, Selection(tuple(locations)), query, search_type="fts")
    return sorted((h.database, h.content) for h in hits)


async def test_the_least_recently_searched_database_is_closed_and_reopened_with_its_results(
    databases: dict[str, Location], workspace
) -> None:
    ws = _capped(workspace, 2)
    owls, tides, bees = databases["owls"], databases["tides"], databases["bees"]
    first = await _found(ws, [owls], "owls night")
    assert first and {db for db, _ in first} == {"owls"}
    await _found(ws, [tides], "tides moon")
    assert ws.pool.open_names == ["owls", "tides"]
    await _found(ws, [tides], "spring")  # tides is now the most recent: owls goes first
    await _found(ws, [bees], "bees hive")
    assert ws.pool.open_names == ["tides", "bees"]
    # Written while it was closed: the reopened database finds what it held and what was added since.
    await operations.add_text(
        workspace(), owls, "Barn owls nest in old barns at night.", title=None, metadata={}
    )
    again = await _found(ws, [owls], "owls night")
    assert set(first) < set(again) and ("owls", "Barn owls nest in old barns at night.") in again
    assert ws.pool.open_names == ["bees", "owls"]


async def test_one_search_over_more_databases_than_the_limit_covers_them_all(
    databases: dict[str, Location], workspace
) -> None:
    ws = _capped(workspace, 1)
    every = list(databases.values())
    found = await _found(ws, every, "night moon hive")
    assert {db for db, _ in found} == {"owls", "tides", "bees"}
    assert sorted(ws.pool.open_names) == ["bees", "owls", "tides"]  # held until that search was done
    await _found(ws, [databases["tides"]], "tides")
    assert ws.pool.open_names == ["tides"]


async def test_concurrent_searches_under_a_limit_of_one_each_get_their_own_results(
    databases: dict[str, Location], workspace
) -> None:
    ws = _capped(workspace, 1)
    queries = {"owls": "owls night", "tides": "tides moon", "bees": "bees hive"}
    alone = {name: await _found(workspace(), [databases[name]], q) for name, q in queries.items()}
    got: dict[tuple[str, int], list[tuple[str, str]]] = {}

    async def search(name: str, round_: int) -> None:
        got[(name, round_)] = await _found(ws, [databases[name]], queries[name])

    async with anyio.create_task_group() as tg:
        for round_ in range(4):
            for name in queries:
                tg.start_soon(search, name, round_)
    assert got == {(name, r): alone[name] for name in queries for r in range(4)}
    assert len(ws.pool.open_names) == 1


async def test_the_check_before_serving_names_every_unreadable_database_and_opens_none(
    databases: dict[str, Location], workspace, tmp_path: Path
) -> None:
    ws = workspace()
    later = Location("later", str(tmp_path / "later.lancedb"))
    written, not_created = await ws.check_served(Selection((databases["owls"], later)))
    assert written.names == ["owls"] and not_created == ["later"]
    assert ws.pool.open_names == []  # opened by the first request that reads it
    with pytest.raises(DatabaseError, match="database 'later' does not exist yet"):
        await ws.check_served(Selection((later,)))
