"""Pictures of documents: their rows, and reading them back (their place in the text: `markers`)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Sequence
from typing import Any

from haiku_cli.store.blocking import wait
from haiku_cli.store.handle import Database
from haiku_cli.store.reads import get_documents, in_list, rows_where, sql_string
from haiku_cli.store.records import PictureInfo, PictureRecord

_INFO_COLUMNS = ["document_id", "reference", "page", "box", "width", "height", "format", "caption", "source"]


def picture_rows(document_id: str, pictures: Sequence[PictureRecord]) -> list[dict[str, Any]]:
    """Rows of the pictures table for a document's pictures, under the id it is stored with."""
    return [{**p.model_dump(), "document_id": document_id, "size": len(p.data)} for p in pictures]


async def pictures_of(db: Database, document_ids: Iterable[str]) -> dict[str, list[PictureInfo]]:
    """The pictures (without bytes) of each document, in document order; a database without any has none."""
    ids = list(dict.fromkeys(document_ids))
    table = await _pictures_table(db)
    found: dict[str, list[PictureInfo]] = {i: [] for i in ids}
    if table is None or not ids:
        return found
    rows = await _rows(db, table, in_list("document_id", ids), [*_INFO_COLUMNS, "size"])
    for row in rows:
        found[row["document_id"]].append(PictureInfo.model_validate(row))
    return found


async def get_pictures(
    db: Database, document_id: str, references: Iterable[str] | None = None
) -> list[PictureRecord]:
    """A document's pictures with their bytes (only those named by `references`, when given)."""
    table = await _pictures_table(db)
    if table is None:
        return []
    where = f"document_id = {sql_string(document_id)}"
    refs = None if references is None else list(dict.fromkeys(references))
    if refs is not None:
        if not refs:
            return []
        where += f" AND {in_list('reference', refs)}"
    rows = await _rows(db, table, where, [*_INFO_COLUMNS, "size", "data"])
    return [PictureRecord.model_validate(r) for r in rows]


async def _pictures_table(db: Database) -> Any:
    # Looking a side table up lists the database's tables (a request on object storage): off the loop.
    return await asyncio.to_thread(lambda: db.pictures)


async def _rows(db: Database, table: Any, where: str, columns: list[str]) -> list[dict[str, Any]]:
    rows = (await rows_where(db, table, where, columns)).to_pylist()
    # Stored in document order by write; a listing keeps it by page, then by the order references sort.
    return sorted(rows, key=lambda r: (r["page"] or 0, _natural(r["reference"])))


def _natural(reference: str) -> list[tuple[int, Any]]:
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", reference)]


def drop_orphans(db: Database) -> int:
    """Delete the pictures of documents that are gone (an older haiku deleted or replaced them without
    knowing of pictures); how many documents' pictures went."""
    table = db.pictures
    if table is None:
        return 0
    column = wait(rows_where(db, table, None, ["document_id"]))
    owners = set(column["document_id"].to_pylist())
    gone = sorted(owners - set(wait(get_documents(db, owners))))
    if gone:
        table.delete(in_list("document_id", gone))
    return len(gone)
