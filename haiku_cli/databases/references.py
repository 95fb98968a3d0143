"""Which document a user means: a full id, a unique id prefix (as git takes), a uri, or the path it was
added from."""

from __future__ import annotations

import re

from haiku_cli.databases.short_ids import short_ids
from haiku_cli.errors import Hint, InputError, echoed
from haiku_cli.store import reads
from haiku_cli.store.database import Database
from haiku_cli.store.location import Location
from haiku_cli.store.records import ChunkRecord, DocumentRecord

MIN_PREFIX = 4  # the shortest id prefix taken (git's rule)
_ID_PREFIX = re.compile(r"[0-9a-f-]+")
_SHOWN_CANDIDATES = 5


class NotFound(InputError):
    """A reference that names nothing in the database (as opposed to one naming several things)."""


async def resolve(db: Database, location: Location, reference: str) -> str:
    """The id of the one document `reference` names in `db`; an unknown or ambiguous one is refused."""
    return (await _find(db, location, reference, content=False)).id


async def document(db: Database, location: Location, reference: str) -> DocumentRecord:
    """The one document (with its content) `reference` names in `db`, as `resolve` finds it."""
    return await _find(db, location, reference, content=True)


async def _find(db: Database, location: Location, reference: str, *, content: bool) -> DocumentRecord:
    # A full id or a uri finds the document in one query, with its content when asked; an id prefix
    # finds its id, and then its content.
    reference = reference.strip()  # pasted with the space or newline around it
    if not reference:
        raise not_found(reference, location)
    by_id = (await reads.get_documents(db, [reference], content=content)).get(reference)
    if by_id is not None:
        return by_id
    lowered = reference.lower()
    if len(reference) >= MIN_PREFIX and _ID_PREFIX.fullmatch(lowered):
        matches = await reads.documents_with_id_prefix(db, lowered, limit=_SHOWN_CANDIDATES + 1)
        if len(matches) == 1:
            found = await reads.get_document(db, matches[0].id) if content else matches[0]
            if found is None:  # deleted between the two reads
                raise not_found(reference, location)
            return found
        if matches:
            labels = [(m.id, m.title or m.uri or "untitled") for m in matches]
            raise _ambiguous(reference, location, "documents", labels)
    for uri in _uris(reference):
        by_uri = await reads.find_by_uri(db, uri, content=content)
        if by_uri is not None:
            return by_uri
    if len(reference) < MIN_PREFIX and _ID_PREFIX.fullmatch(lowered):
        raise too_short(reference)
    raise not_found(reference, location)


async def chunk(db: Database, location: Location, chunk_id: str) -> ChunkRecord:
    """The chunk with this id, or unique id prefix, in `db`; an unknown or ambiguous one is refused."""
    chunk_id = chunk_id.strip()
    found = (await reads.get_chunks(db, [chunk_id])).get(chunk_id)
    if found is not None:
        return found
    lowered = chunk_id.lower()
    if len(chunk_id) >= MIN_PREFIX and _ID_PREFIX.fullmatch(lowered):
        matches = await reads.chunks_with_id_prefix(db, lowered, limit=_SHOWN_CANDIDATES + 1)
        if len(matches) == 1:
            return matches[0]
        if matches:
            labels = [(m.id, f"chunk {m.order} of document {m.document_id[:8]}") for m in matches]
            raise _ambiguous(chunk_id, location, "chunks", labels)
    if len(chunk_id) < MIN_PREFIX and _ID_PREFIX.fullmatch(lowered):
        raise too_short(chunk_id)
    raise NotFound(
        f"no chunk with id or id prefix {chunk_id!r} in database '{location.name}'; chunk ids are in "
        "`haiku search --json` (chunk_id) and in the citations of `haiku ask`"
    )


def _ambiguous(reference: str, location: Location, kind: str, matches: list[tuple[str, str]]) -> InputError:
    """The error for an id prefix shared by several documents or chunks: the first few, by id."""
    listed = matches[:_SHOWN_CANDIDATES]
    shown = short_ids([i for i, _ in listed])
    count = f"more than {_SHOWN_CANDIDATES}" if len(matches) > _SHOWN_CANDIDATES else str(len(matches))
    return InputError(
        f"id prefix '{echoed(reference)}' matches {count} {kind} in database '{location.name}': "
        f"{', '.join(f'{shown[i]} ({label})' for i, label in listed)}; give more of the id"
    )


def too_short(reference: str) -> InputError:
    """The error for an id prefix shorter than any taken: it could name too many things to be useful."""
    return InputError(
        f"an id prefix needs {MIN_PREFIX} characters or more; '{echoed(reference)}' has {len(reference)}"
    )


def not_found(reference: str, location: Location) -> NotFound:
    """The error for a reference that names no document of the database."""
    return NotFound(
        f"no document with id, id prefix, uri or path '{echoed(reference.strip())}' in database "
        f"'{location.name}'",
        hint=Hint("list_documents", location.name, location.chosen_by),
    )


def _uris(reference: str) -> list[str]:
    """The uris a reference may have been stored under: as given, and as `add-src` stores a path."""
    # Imported here: the ingest package is not needed by searches, which reach this module too.
    from haiku_cli.ingest.kinds import kind_of
    from haiku_cli.ingest.source_walk import as_source

    source = as_source(reference)
    return [reference, kind_of(source).stored_uri(source)]
