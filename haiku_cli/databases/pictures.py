"""Reading pictures of the selection's documents: by key for the agents, by document for `haiku pictures`."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

import anyio.to_thread
from pydantic import BaseModel

from haiku_cli.databases import references
from haiku_cli.databases.freshness import SourceCheck, check_documents
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.reading import read_each, read_one
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from haiku_cli.search.hits import SourceState
from haiku_cli.store import reads
from haiku_cli.store.database import Database
from haiku_cli.store.location import Location
from haiku_cli.store.picture_table import get_pictures
from haiku_cli.store.records import ChunkRecord, DocumentSummary, PictureInfo, PictureRecord


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

    async def read(db: Database) -> list[PictureRecord]:
        found = []
        for document_id, refs in wanted.get(db.name, {}).items():
            found.extend(await get_pictures(db, document_id, refs))
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

    async def read(db: Database) -> DocumentPictures:
        doc = await references.document(db, location, document_id)
        pictures = await get_pictures(db, doc.id)
        return DocumentPictures(database=db.name, document=doc.summary(), pictures=pictures)

    return await read_one(ws.pool, location, read)


class WrittenPicture(PictureInfo):
    """A picture written to a file."""

    path: str


class WrittenPictures(BaseModel):
    """What `haiku pictures --out` wrote: one file per picture of the document."""

    database: str
    document_id: str
    document_title: str | None
    folder: str
    pictures: list[WrittenPicture]


_SUFFIXES = {"png": ".png", "jpeg": ".jpg"}


async def write_pictures(
    ws: Workspace, location: Location, document_id: str, folder: Path
) -> WrittenPictures:
    """Write a document's pictures into `folder` (made if missing) as `{reference}.png` / `.jpg`."""
    found = await document_pictures(ws, location, document_id)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} is a file; give a folder to write the pictures into")
    written = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for picture in found.pictures:
            path = folder / f"{picture.reference}{_SUFFIXES.get(picture.format, '.png')}"
            path.write_bytes(picture.data)
            written.append(WrittenPicture(**picture.info().model_dump(), path=str(path)))
    except (PermissionError, NotADirectoryError, FileExistsError) as exc:
        raise InputError(f"cannot write the pictures into {folder}: {exc.strerror or exc}") from exc
    doc = found.document
    return WrittenPictures(
        database=found.database,
        document_id=doc.id,
        document_title=doc.title,
        folder=str(folder),
        pictures=written,
    )


class HighlightedPage(BaseModel):
    """One page of a chunk drawn with the chunk's text highlighted."""

    page: int
    path: str
    lines_found: int
    lines: int


class Visualized(BaseModel):
    """What `haiku visualize` wrote for a chunk: a PNG per page it spans."""

    database: str
    chunk_id: str
    document_id: str
    document_title: str | None
    document_uri: str | None
    pages: list[HighlightedPage]
    # The pages are drawn from the file as it is now, the highlight from the stored text: a `changed`
    # source may not hold it where it was (as a search hit's; docs/json.md)
    source_state: SourceState = "unknown"
    source_note: str | None = None


async def visualize_chunk(
    ws: Workspace, location: Location, chunk_id: str, folder: Path | None = None
) -> Visualized:
    """Draw each page of a chunk of a PDF (read again from the file it was added from) with the chunk's
    text highlighted, as `{chunk id start}-p{page}.png` in `folder` (default: the current directory)."""
    from haiku_cli.ingest.convert.pdf_highlight import highlight_lines, highlight_page

    async def read(db: Database) -> tuple[ChunkRecord, DocumentSummary | None, SourceCheck]:
        chunk = await references.chunk(db, location, chunk_id)
        doc = await reads.get_document(db, chunk.document_id)
        checks = await check_documents(db, [chunk.document_id])
        return chunk, doc.summary() if doc is not None else None, checks[chunk.document_id]

    chunk, doc, check = await read_one(ws.pool, location, read)
    if doc is None:
        raise InputError(f"chunk {chunk_id!r}: its document was deleted")
    path = _local_pdf(doc, chunk_id)
    if not chunk.pages:
        raise InputError(f"chunk {chunk_id!r} has no page number: only chunks of PDFs can be drawn")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(
            f"{path}: cannot read ({exc.strerror or exc}); visualize draws the file added"
        ) from exc
    folder = folder or Path.cwd()
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} is a file; give a folder to write the pictures into")
    pages = []
    lines = len(highlight_lines(chunk.text))
    for page in chunk.pages:
        png, found = await anyio.to_thread.run_sync(
            partial(highlight_page, data, page, chunk.text, label=str(path))
        )
        out = folder / f"{chunk.id[:8]}-p{page}.png"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            out.write_bytes(png)
        except (PermissionError, NotADirectoryError) as exc:
            raise InputError(f"cannot write {out}: {exc.strerror or exc}") from exc
        pages.append(HighlightedPage(page=page, path=str(out), lines_found=found, lines=lines))
    return Visualized(
        database=location.name,
        chunk_id=chunk.id,
        document_id=doc.id,
        document_title=doc.title,
        document_uri=doc.uri,
        pages=pages,
        source_state=check.shown,
        source_note=check.note,
    )


def _local_pdf(doc: DocumentSummary, chunk_id: str) -> Path:
    uri = doc.uri or ""
    # A PDF attached to a mail (`mail.eml#attachment/a.pdf`) has no file of its own to draw.
    if not uri.startswith("file://") or not uri.lower().endswith(".pdf") or urlsplit(uri).fragment:
        raise InputError(
            f"chunk {chunk_id!r} is from {uri or 'a text added directly'}: only chunks of PDFs added from "
            "a local file can be drawn"
        )
    path = Path(unquote(urlsplit(uri).path))
    if not path.is_file():
        raise InputError(f"{path}: no such file; visualize draws the PDF the chunk was added from")
    return path
