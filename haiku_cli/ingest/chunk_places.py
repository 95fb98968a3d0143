"""Where chunks written before haiku recorded it stand in their document: found again in its stored text.

A chunk joins its document's paragraphs with one blank line whatever stood between them (more blank
lines, a comment left out), and a code block cut over several chunks is fenced again in each; so a
chunk is looked for paragraph by paragraph, in order, with nothing but whitespace between them, and
a fence line the document does not hold there is let go. A chunk not found stays without a place.
Source lines are known only where another chunk of the document knows both its characters and lines
(the stored text alone does not say how many lines of its file came before it).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator

from haiku_cli.ingest.stored import PAGE_BREAK, lines_before
from haiku_cli.store import schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.reads import chunk_rows_of, get_documents
from haiku_cli.store.span_columns import Place, set_places, unplaced_documents
from haiku_cli.store.transaction import storage_errors

_OPENING = re.compile(r" {0,3}(?:`{3,}|~{3,})[^\n]*\n")
_CLOSING = re.compile(r"\n {0,3}(?:`{3,}|~{3,})[ \t]*\Z")
_ONLY_FENCE = re.compile(r" {0,3}(?:`{3,}|~{3,})[^\n]*")
_DOCUMENTS = 64  # documents whose text is read at once


def fill_places(db: Database) -> int:
    """Give each chunk that does not know where it stands its place, where its text is found in its
    document's; one all-or-nothing write. How many chunks were placed."""
    documents = unplaced_documents(db)
    places: dict[str, Place] = {}
    for start in range(0, len(documents), _DOCUMENTS):
        ids = documents[start : start + _DOCUMENTS]
        with storage_errors(db, "cannot be read"):
            texts = wait(get_documents(db, ids, content=True))
            rows = wait(chunk_rows_of(db, ids, ["id", "document_id", "order", "text", *schema.SPAN_FIELDS]))
        by_document: dict[str, list[dict]] = defaultdict(list)
        for row in rows.to_pylist():
            by_document[row["document_id"]].append(row)
        for document_id, chunks in by_document.items():
            doc = texts.get(document_id)
            if doc is not None and doc.content:
                places.update(place_chunks(doc.content, sorted(chunks, key=lambda r: r["order"])))
    return set_places(db, places)


def place_chunks(content: str, chunks: list[dict]) -> dict[str, Place]:
    """The places found for a document's chunks (rows with `id`, `text` and the span fields, in order)
    that have none."""
    paged = PAGE_BREAK in content
    skipped = None if paged else lines_before(content, ((c["char_start"], c["line_start"]) for c in chunks))
    found: dict[str, Place] = {}
    at = 0
    for chunk in chunks:
        if chunk["char_start"] is not None:
            at = chunk["char_start"] + 1
            continue
        where = locate(content, chunk["text"], at)
        if where is None:
            continue
        start, end = where
        first = last = None
        if skipped is not None:
            first = skipped + content.count("\n", 0, start) + 1
            last = skipped + content.count("\n", 0, max(start, end - 1)) + 1
        found[chunk["id"]] = (start, end, first, last)
        at = start + 1  # the next chunk may repeat this one's end (overlap), never start before it
    return found


def locate(content: str, text: str, at: int = 0) -> tuple[int, int] | None:
    """Characters [start, end) of `content`, from `at` on, that `text` was cut from; None if not there."""
    pieces = [p.strip() for p in text.split("\n\n") if p.strip()]
    # A fence alone as the chunk's first or last paragraph is one the cut added.
    while len(pieces) > 1 and _ONLY_FENCE.fullmatch(pieces[0]):
        pieces.pop(0)
    while len(pieces) > 1 and _ONLY_FENCE.fullmatch(pieces[-1]):
        pieces.pop()
    start = end = None
    for i, piece in enumerate(pieces):
        hit = None
        for variant in _variants(piece, first=i == 0, last=i == len(pieces) - 1):
            found = content.find(variant, at if end is None else end)
            if found >= 0:
                hit = (found, found + len(variant))
                break
        if hit is None or (end is not None and content[end : hit[0]].strip()):
            return None
        start = hit[0] if start is None else start
        end = hit[1]
    return None if start is None or end is None else (start, end)


def _variants(piece: str, *, first: bool, last: bool) -> Iterator[str]:
    """The piece, then without the fence lines a cut code block gets again at a chunk's edges (the place
    of such a chunk is its code lines, as the chunker gives it)."""
    yield piece
    opening = _OPENING.match(piece) if first else None
    closing = _CLOSING.search(piece) if last else None
    trimmed = piece[opening.end() if opening else 0 : closing.start() if closing else len(piece)].strip()
    if trimmed and trimmed != piece:
        yield trimmed
