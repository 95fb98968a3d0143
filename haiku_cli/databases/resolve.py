"""Resolving chunk and document ids to the one database that holds them, refusing ambiguity."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from haiku_cli.databases.freshness import UNCHECKED, SourceCheck
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.reading import read_each
from haiku_cli.databases.selection import Selection
from haiku_cli.store.database import Database
from haiku_cli.store.reads import get_chunks, get_documents
from haiku_cli.store.records import ChunkRecord, DocumentRecord


@dataclass
class ResolvedChunk:
    """A chunk, its document and the database both came from."""

    database: str
    chunk: ChunkRecord
    document: DocumentRecord | None
    source: SourceCheck = UNCHECKED  # whether the document's source changed since it was read


T = TypeVar("T")


@dataclass
class Resolution(Generic[T]):
    """Ids found in exactly one database, ids found nowhere, and ids found in several."""

    found: dict[str, T] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    ambiguous: dict[str, list[str]] = field(default_factory=dict)


async def _per_database(
    pool: DatabasePool, selection: Selection, fn: Callable[[Database], Awaitable[dict]]
) -> dict[str, dict]:
    results = await read_each(pool, selection, fn)
    return dict(zip(selection.names, results, strict=True))


def _split(ids: list[str], held: dict[str, dict[str, T]], order: list[str]) -> Resolution[T]:
    res: Resolution[T] = Resolution()
    holders: dict[str, list[str]] = defaultdict(list)
    for name in order:
        for id_ in held[name]:
            holders[id_].append(name)
    for id_ in ids:
        names = holders.get(id_, [])
        if not names:
            res.missing.append(id_)
        elif len(names) > 1:
            res.ambiguous[id_] = names
        else:
            res.found[id_] = held[names[0]][id_]
    return res


async def resolve_documents(
    pool: DatabasePool, selection: Selection, ids: Iterable[str], *, content: bool = False
) -> Resolution[tuple[str, DocumentRecord]]:
    """Find each document id in the selection; an id held by two databases is ambiguous, never guessed."""
    ids = list(dict.fromkeys(ids))
    held = await _per_database(pool, selection, lambda db: get_documents(db, ids, content=content))
    labelled = {name: {i: (name, d) for i, d in docs.items()} for name, docs in held.items()}
    return _split(ids, labelled, selection.names)


async def resolve_chunks(
    pool: DatabasePool, selection: Selection, ids: Iterable[str]
) -> Resolution[ResolvedChunk]:
    """Find each chunk id (with its document) in the selection, refusing ids held by several databases."""
    ids = list(dict.fromkeys(ids))

    async def lookup(db: Database) -> dict[str, ResolvedChunk]:
        chunks = await get_chunks(db, ids)
        docs = await get_documents(db, {c.document_id for c in chunks.values()})
        return {i: ResolvedChunk(db.name, c, docs.get(c.document_id)) for i, c in chunks.items()}

    held = await _per_database(pool, selection, lookup)
    return _split(ids, held, selection.names)
