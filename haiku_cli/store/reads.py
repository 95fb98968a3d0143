"""Reading documents and chunks, with SQL filters checked into clear errors."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from haiku_cli.errors import InputError
from haiku_cli.store import schema
from haiku_cli.store.failures import (
    FilterFault,
    classify_filter,
    is_read_failure,
    storage_failure,
    unclosed_before,
)
from haiku_cli.store.filters import FILTER_FIELDS, sql_string, translate
from haiku_cli.store.handle import Database, parse_json_object, read_errors
from haiku_cli.store.records import ChunkRecord, DocumentRecord

if TYPE_CHECKING:
    import pyarrow as pa

_DOC_COLUMNS = ["id", "uri", "title", "metadata", "content_hash", "created_at", "updated_at"]
_CHUNK_COLUMNS = ["id", "document_id", "order", "text", "heading_path", "pages"]


def _chunk_columns(db: Database) -> list[str]:
    """The chunk columns a ChunkRecord holds, as far as the table's layout has them."""
    return _CHUNK_COLUMNS + (list(schema.SPAN_FIELDS) if db.chunks_carry_spans else [])


def in_list(column: str, values: Iterable[str]) -> str:
    """`column IN (...)` for string values."""
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})"


def check_filter(where: str) -> str:
    """The filter as LanceDB is asked it; refuses text after its condition rather than ignore it.

    LanceDB's parser stops at the end of the first whole condition and drops the rest (`created_at IS
    NOT NULL garbage` matched like `created_at IS NOT NULL`). With balanced parentheses, the filter in
    parentheses of its own must end where they close, so trailing text becomes a parse error.
    """
    in_string, depth = False, 0
    for i, ch in enumerate(where):
        if ch == "'":
            in_string = not in_string  # a doubled '' toggles twice: still inside the string
        elif in_string:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == ";" or depth < 0:
            _trailing(where, where[i:])
    if depth > 0:
        raise InputError(f"invalid filter {where!r}: a '(' is not closed")
    return f"({where})"


def _trailing(where: str, rest: str) -> NoReturn:
    shown = f": {rest.strip()[:60]!r}" if rest.strip() else ""
    raise InputError(
        f"invalid filter {where!r}: unexpected text after the condition{shown}; a filter is one SQL condition"
    )


def async_table(table: Any) -> Any:
    """LanceDB's async table behind a sync one, the same table at the same version: awaited on any
    event loop, it reads without the round trip to LanceDB's own loop each synchronous call makes."""
    inner = getattr(table, "_table", None)
    if inner is None or not callable(getattr(inner, "query", None)):
        # The attribute LanceDB's sync table keeps it in; pyproject pins a release that has it. The public
        # way, `lancedb.connect_async` + `open_table` + `checkout(version)`, is a second connection per
        # database that reads the table's manifest again: many times the CPU of this per database opened
        # locally, and a round trip more on object storage (benchmarks/async_open.py).
        raise RuntimeError(f"this LanceDB release keeps no async table behind {type(table).__name__}")
    return inner


async def rows_where(db: Database, table: Any, where: str | None, columns: list[str]) -> pa.Table:
    """Some columns of every row of `table` matching `where` (all rows when None), as Arrow."""
    return await _query_arrow(db, table, where, columns, None)


async def _query_rows(
    db: Database, table: Any, where: str | None, columns: list[str], limit: int | None
) -> list[dict[str, Any]]:
    return (await _query_arrow(db, table, where, columns, limit)).to_pylist()


async def _query_arrow(
    db: Database, table: Any, where: str | None, columns: list[str], limit: int | None
) -> pa.Table:
    query = async_table(table).query().select(columns)
    sql = f"({translate(where)})" if where and check_filter(where) else None
    if sql:
        query = query.where(sql)
    if limit is not None:  # an async query without a limit reads every matching row
        query = query.limit(limit)
    try:
        return await query.to_arrow()
    except Exception as exc:
        if is_read_failure(exc):
            # A file gone from under a reader (a concurrent vacuum) is the store's failure, not the filter's.
            raise storage_failure(db.location, "cannot be read", exc) from exc
        if not where:
            raise
        try:  # the filter alone, as the user wrote it: what LanceDB finds wrong in it
            plain = async_table(table).query().select(columns[:1]).where(translate(where)).limit(1)
            await plain.to_arrow()
        except Exception as wrong:
            raise InputError(f"invalid filter {where!r}: {_filter_problem(wrong, where)}") from wrong
        # Whole alone but not in parentheses of its own: text after its condition, which LanceDB drops.
        _trailing(where, unclosed_before(exc) or "")


def _filter_problem(exc: Exception, where: str) -> str:
    """What LanceDB found wrong in a filter, in words about the filter alone."""
    problem = classify_filter(exc)
    if problem.fault is FilterFault.UNKNOWN_FIELD:
        return f"there is no field {problem.subject}; a filter can name {FILTER_FIELDS}"
    if problem.fault is FilterFault.NOT_A_MAP:
        indexed = re.search(r"([A-Za-z_]\w*)\s*\[\s*['\"]?([^'\"\]]*)", where)
        field, key = indexed.groups() if indexed else ("metadata", "KEY")
        example = f"metadata.{key or 'KEY'} = 'draft'"
        return f"{field}[...] does not name a key; a metadata key is written metadata.KEY, e.g. {example}"
    given = problem.subject
    if problem.fault is FilterFault.NOT_A_TIME:
        return f"{given} is not a time; compare with an ISO date in quotes, e.g. created_at > '2024-01-31'"
    if problem.fault is FilterFault.NOT_TEXT:
        return f"{given} is not text; put the value in quotes, e.g. title = '{given}'"
    return problem.subject  # the parser's words, or LanceDB's own without its wrappers


def _document(row: dict[str, Any]) -> DocumentRecord:
    return DocumentRecord(
        id=row["id"],
        uri=row.get("uri"),
        title=row.get("title"),
        metadata=parse_json_object(row.get("metadata")),
        content=row.get("content") or "",
        content_hash=row.get("content_hash") or "",
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def list_documents(
    db: Database, *, where: str | None = None, limit: int | None = 50, offset: int = 0
) -> list[DocumentRecord]:
    """Documents (without content), oldest first, optionally filtered by SQL over document fields."""
    rows = await _query_rows(db, db.documents, where, _DOC_COLUMNS, None)
    rows.sort(key=lambda r: (r["created_at"], r["id"]))
    rows = rows[offset : offset + limit] if limit is not None else rows[offset:]
    return [_document(r) for r in rows]


async def document_ids(db: Database, *, where: str | None = None) -> list[str]:
    """Ids of the documents matching a filter (all when None)."""
    return [r["id"] for r in await _query_rows(db, db.documents, where, ["id"], None)]


async def get_documents(
    db: Database, ids: Iterable[str], *, content: bool = False
) -> dict[str, DocumentRecord]:
    """Documents by id, in one query; ids not held are absent from the result."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {}
    columns = _DOC_COLUMNS + (["content"] if content else [])
    rows = await _query_rows(db, db.documents, in_list("id", ids), columns, len(ids))
    return {r["id"]: _document(r) for r in rows}


async def documents_of(wanted: Sequence[tuple[Database, Iterable[str]]]) -> list[dict[str, DocumentRecord]]:
    """`get_documents` of several databases, all at once."""
    return list(await asyncio.gather(*(get_documents(db, ids) for db, ids in wanted)))


async def get_document(db: Database, document_id: str) -> DocumentRecord | None:
    """One document with its content, or None."""
    return (await get_documents(db, [document_id], content=True)).get(document_id)


def _id_prefix_filter(prefix: str) -> str:
    pattern = prefix.replace("\\", "").replace("%", "").replace("_", "") + "%"
    return f"id LIKE {sql_string(pattern)}"


async def documents_with_id_prefix(db: Database, prefix: str, *, limit: int) -> list[DocumentRecord]:
    """Documents (without content) whose id starts with `prefix`, by id; at most `limit`."""
    rows = await _query_rows(db, db.documents, _id_prefix_filter(prefix), _DOC_COLUMNS, None)
    rows.sort(key=lambda r: r["id"])
    return [_document(r) for r in rows[:limit]]


async def chunks_with_id_prefix(db: Database, prefix: str, *, limit: int) -> list[ChunkRecord]:
    """Chunks whose id starts with `prefix`, by id; at most `limit`."""
    rows = await _query_rows(db, db.chunks, _id_prefix_filter(prefix), _chunk_columns(db), None)
    rows.sort(key=lambda r: r["id"])
    return [ChunkRecord(**r) for r in rows[:limit]]


async def find_by_uri(db: Database, uri: str, *, content: bool = False) -> DocumentRecord | None:
    """The document previously added from this uri, if any (with its content when asked)."""
    columns = _DOC_COLUMNS + (["content"] if content else [])
    rows = await _query_rows(db, db.documents, f"uri = {sql_string(uri)}", columns, 1)
    return _document(rows[0]) if rows else None


async def stored_uris(db: Database) -> list[str]:
    """The uri of every document that has one."""
    return [r["uri"] for r in await _query_rows(db, db.documents, "uri IS NOT NULL", ["uri"], None)]


async def stored_hashes(db: Database) -> dict[str, str]:
    """The content hash of every document that has a uri, by uri."""
    rows = await _query_rows(db, db.documents, "uri IS NOT NULL", ["uri", "content_hash"], None)
    return {r["uri"]: r["content_hash"] for r in rows}


async def find_by_hash(db: Database, content_hash: str) -> DocumentRecord | None:
    """A uri-less document with this content, if any (so re-adding the same text is a no-op)."""
    where = f"uri IS NULL AND content_hash = {sql_string(content_hash)}"
    rows = await _query_rows(db, db.documents, where, _DOC_COLUMNS, 1)
    return _document(rows[0]) if rows else None


async def get_chunks(db: Database, ids: Iterable[str]) -> dict[str, ChunkRecord]:
    """Chunks by id; ids not held are absent."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {}
    rows = await _query_rows(db, db.chunks, in_list("id", ids), _chunk_columns(db), len(ids))
    return {r["id"]: ChunkRecord(**r) for r in rows}


async def chunks_of(db: Database, document_id: str) -> list[ChunkRecord]:
    """A document's chunks in order."""
    return (await chunks_of_documents(db, [document_id]))[document_id]


async def chunks_of_documents(db: Database, document_ids: Iterable[str]) -> dict[str, list[ChunkRecord]]:
    """The chunks of several documents, each in order (one query, through the document_id index)."""
    ids = list(dict.fromkeys(document_ids))
    if not ids:
        return {}
    out: dict[str, list[ChunkRecord]] = {i: [] for i in ids}
    for row in await _query_rows(db, db.chunks, in_list("document_id", ids), _chunk_columns(db), None):
        out[row["document_id"]].append(ChunkRecord(**row))
    for chunks in out.values():
        chunks.sort(key=lambda c: c.order)
    return out


async def chunk_rows_of(db: Database, document_ids: Iterable[str], columns: list[str]) -> pa.Table:
    """Some columns of the chunks of several documents, as Arrow (one query through the document_id index)."""
    ids = list(dict.fromkeys(document_ids))
    if not ids:
        import pyarrow as pa  # here: what imports this module (a server starting) need not import pyarrow

        return pa.table({c: [] for c in columns})
    return await _query_arrow(db, db.chunks, in_list("document_id", ids), columns, None)


async def count_rows(db: Database, table: Any) -> int:
    """How many rows a table of the database holds, at the version its handle reads."""
    with read_errors(db):
        return int(await async_table(table).count_rows())


async def count_documents(db: Database) -> int:
    """How many documents the database holds."""
    return await count_rows(db, db.documents)


async def count_chunks(db: Database) -> int:
    """How many chunks the database holds."""
    return await count_rows(db, db.chunks)
