"""Reading pictures of the selection's documents: by key for the agents, by document for `haiku pictures`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from pydantic import BaseModel

from haiku_cli.databases import references
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.reading import read_each, read_one
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.store import reads
from haiku_cli.store.database import Database
from haiku_cli.store.location import Location
from haiku_cli.store.pictures import get_pictures
from haiku_cli.store.records import DocumentSummary, PictureRecord


class PictureKey(NamedTuple):
    """A picture's identity across a selection: its database, document and reference."""

    database: str
    document_id: str
    reference: str


async def fetch_pictures(
    pool: DatabasePool, selection: Selection, keys: Iterable[PictureKey]
) -> dict[PictureKey, PictureRecord]:
    """The pictures named by `keys` that the selection's databases still hold (through `clients_covering`,
    so a key naming a database outside the selection is never reached); missing ones are left out."""
    wanted: dict[str, dict[str, list[str]]] = {}
    for key in dict.fromkeys(keys):
        wanted.setdefault(key.database, {}).setdefault(key.document_id, []).append(key.reference)
    names = [loc.name for loc in selection.locations]
    if not any(name in wanted for name in names):
        return {}

    def read(db: Database) -> list[PictureRecord]:
        found = []
        for document_id, refs in wanted.get(db.name, {}).items():
            found.extend(get_pictures(db, document_id, refs))
        return found

    found: dict[PictureKey, PictureRecord] = {}
    for name, records in zip(names, await read_each(pool, selection, read), strict=True):
        for record in records:
            found[PictureKey(name, record.document_id, record.reference)] = record
    return found


class DocumentPictures(BaseModel):
    """A document's pictures with their bytes, as `haiku pictures` writes them out."""

    database: str
    document: DocumentSummary
    pictures: list[PictureRecord]


async def document_pictures(ws: Workspace, location: Location, document_id: str) -> DocumentPictures:
    """One document's pictures, the document named as `haiku get` takes it."""

    def read(db: Database) -> DocumentPictures:
        found = references.resolve(db, location, document_id)
        doc = reads.get_document(db, found)
        if doc is None:  # deleted between the two reads
            raise references.not_found(document_id, location)
        return DocumentPictures(database=db.name, document=doc.summary(), pictures=get_pictures(db, found))

    return await read_one(ws.pool, location, read)
