"""A part of a document, exactly: a range of its source's lines (`get --lines`), or the run a chunk was cut
from (`get --chunk`), so a reader can check a citation without hunting through the file."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from haiku_cli.databases import references
from haiku_cli.databases.freshness import RemoteCheck, check_documents
from haiku_cli.databases.reading import read_one
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from haiku_cli.ingest.stored import lines_before
from haiku_cli.search.hits import SourceState
from haiku_cli.store import reads
from haiku_cli.store.database import Database
from haiku_cli.store.location import Location
from haiku_cli.store.records import DocumentRecord
from haiku_cli.store.source_state import Freshness, path_of

_LINES = re.compile(r"\s*(\d+)\s*(?:([:-])\s*(\d*)\s*)?")


class DocumentPart(BaseModel):
    """A part of a stored document: its text, and where it stands (lines of the source, or of the stored
    text when the source's were not recorded: `lines_of`)."""

    database: str
    document_id: str
    document_uri: str | None = None
    document_title: str | None = None
    chunk_id: str | None = None  # when the part is a chunk's
    line_start: int | None = None
    line_end: int | None = None
    lines_of: Literal["source", "text"] | None = None
    char_start: int | None = None
    char_end: int | None = None
    text: str
    text_of: Literal["stored"] = "stored"  # always the stored text, as search and ask cited it
    source_state: SourceState = "unknown"  # as a search hit's
    source_note: str | None = None
    # With `lines_of` `source` and a `changed` file: whether its current lines at `line_start`-`line_end`
    # differ from `text` (null when not compared)
    differs: bool | None = None


def parse_lines(value: str) -> tuple[int, int | None]:
    """`A:B` (or `A-B`), `A:` (to the end) or `A` as (first, last or None); refuses anything else."""
    m = _LINES.fullmatch(value)
    first = int(m.group(1)) if m else 0
    last = (int(m.group(3)) if m.group(3) else None) if m and m.group(2) else first
    if m is None or first < 1 or (last is not None and last < first):
        raise InputError(f"--lines {value!r}: give a line range as A:B (1-based, A <= B), A: or A")
    return first, last


async def get_part(
    ws: Workspace,
    location: Location,
    reference: str,
    *,
    lines: tuple[int, int | None] | None = None,
) -> DocumentPart:
    """`haiku get DOC --lines A:B`: those lines of the document; without `lines`, `reference` is a chunk
    id and the part is the run of the document that chunk was cut from (`haiku get --chunk CHUNK_ID`)."""

    async def read(db: Database) -> DocumentPart:
        if lines is None:
            part = await _chunk_part(db, location, reference)
        else:
            part = await _lines_part(db, await references.document(db, location, reference), *lines)
        remote = RemoteCheck(ws.settings) if ws.check_remote else None
        check = (await check_documents(db, [part.document_id], remote))[part.document_id]
        differs = None
        if check.state is Freshness.CHANGED and part.lines_of == "source" and part.line_start is not None:
            differs = _current_lines(part) != part.text.split("\n")
        return part.model_copy(update={**check.fields(), "differs": differs})

    return await read_one(ws.pool, location, read)


async def _chunk_part(db: Database, location: Location, chunk_id: str) -> DocumentPart:
    found = await references.chunk(db, location, chunk_id)
    doc = await reads.get_document(db, found.document_id)
    if doc is None:
        raise InputError(f"chunk {chunk_id.strip()!r}: its document was deleted")
    start, end = found.char_start, found.char_end
    # The run of the document the chunk was cut from; a chunk of an older layout is shown as stored.
    text = doc.content[start:end] if start is not None and end is not None else found.text
    lines_of: Literal["source"] | None = "source" if found.line_start is not None else None
    part = _part(db, doc, found.line_start, found.line_end, text, lines_of)
    return part.model_copy(update={"chunk_id": found.id, "char_start": start, "char_end": end})


async def _lines_part(db: Database, doc: DocumentRecord, first: int, last: int | None) -> DocumentPart:
    text_lines = doc.content.split("\n")
    chunks = await reads.chunks_of(db, doc.id)
    skipped = lines_before(doc.content, ((c.char_start, c.line_start) for c in chunks))
    lines_of: Literal["source", "text"] = "text" if skipped is None else "source"
    skipped = skipped or 0
    total = skipped + len(text_lines)
    if not skipped < first <= total:
        where = "source" if lines_of == "source" else "text (its source's lines were not recorded)"
        raise InputError(
            f"--lines {first}:{last or ''}: document {doc.id} holds lines {skipped + 1}-{total} of its "
            f"{where}; give a range within them"
        )
    end = min(last or total, total)
    picked = text_lines[first - skipped - 1 : end - skipped]
    start = sum(len(line) + 1 for line in text_lines[: first - skipped - 1])
    text = "\n".join(picked)
    part = _part(db, doc, first, end, text, lines_of)
    return part.model_copy(update={"char_start": start, "char_end": start + len(text)})


def _current_lines(part: DocumentPart) -> list[str] | None:
    """The source file's lines `line_start`-`line_end` as they are now (None when it cannot be read)."""
    if not (part.document_uri or "").startswith("file://") or part.line_start is None:
        return None
    try:
        with open(path_of(part.document_uri or ""), encoding="utf-8", errors="replace") as file:
            lines = file.read().split("\n")
    except OSError:
        return None
    return lines[part.line_start - 1 : part.line_end or part.line_start]


def _part(
    db: Database,
    doc: DocumentRecord,
    first: int | None,
    last: int | None,
    text: str,
    lines_of: Literal["source", "text"] | None,
) -> DocumentPart:
    return DocumentPart(
        database=db.name,
        document_id=doc.id,
        document_uri=doc.uri,
        document_title=doc.title,
        line_start=first,
        line_end=last,
        lines_of=lines_of,
        text=text,
    )
