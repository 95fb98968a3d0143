"""The text stored for a document (its pages kept apart) and the hash that tells whether it changed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from haiku_cli.ingest.document import ConvertedDocument, Segment
from haiku_cli.store.records import PictureRecord

PAGE_BREAK = "\f"


def content_hash(text: str, pictures: Sequence[bytes] = ()) -> str:
    """The hash that decides whether a re-added source changed: its text, and its pictures if it has any
    (so a document without pictures hashes as it always did)."""
    digest = hashlib.sha256(text.encode("utf-8"))
    for data in pictures:
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def picture_records(doc: ConvertedDocument) -> list[PictureRecord]:
    """A converted document's pictures as the store takes them (the document id is set when written)."""
    return [
        PictureRecord(
            document_id="",
            reference=p.reference,
            page=p.page,
            box=list(p.box) if p.box is not None else None,
            width=p.width,
            height=p.height,
            format=p.format,
            caption=p.caption,
            source=p.source,
            size=len(p.data),
            data=p.data,
        )
        for p in doc.pictures
    ]


def stored_content(doc: ConvertedDocument) -> str:
    """The text stored for a document; each page ends with a form feed so rebuild can recover pages."""
    if any(s.page is not None for s in doc.segments):
        return "".join(s.text + PAGE_BREAK for s in doc.segments)
    return doc.text


def segment_offsets(doc: ConvertedDocument) -> list[int]:
    """Where each segment's text starts in `stored_content(doc)`, so chunks can say where they stand.

    A segment the stored text holds without its leading line breaks starts that many characters
    earlier (nothing is read from them).
    """
    offsets = []
    if any(s.page is not None for s in doc.segments):
        at = 0
        for s in doc.segments:
            offsets.append(at)
            at += len(s.text) + len(PAGE_BREAK)
        return offsets
    at = 0
    for s in doc.segments:
        offsets.append(at - (len(s.text) - len(s.text.lstrip("\n"))))
        if s.text.strip():
            at += len(s.text.strip("\n")) + 2  # and the blank line joining it to the next
    return offsets


def lines_before(content: str, placed: Iterable[tuple[int | None, int | None]]) -> int | None:
    """How many lines of the source file come before the stored text (front matter, blank lines), from
    any (char_start, line_start) of a chunk of it that knows both; None when none does."""
    for char_start, line_start in placed:
        if char_start is not None and line_start is not None:
            return line_start - (content.count("\n", 0, char_start) + 1)
    return None


def from_stored(
    uri: str | None, title: str | None, content: str, *, lines_skipped: int | None = None
) -> ConvertedDocument:
    """Rebuild a converted document from stored content (the inverse of `stored_content`);
    `lines_skipped`: the source's lines before it (`lines_before`), so its chunks know their lines."""
    if content.endswith(PAGE_BREAK):
        pages = content[: -len(PAGE_BREAK)].split(PAGE_BREAK)
        segments = [Segment(text, page=i) for i, text in enumerate(pages, start=1)]
    else:
        segments = [Segment(content, line=None if lines_skipped is None else lines_skipped + 1)]
    return ConvertedDocument(uri=uri or "", title=title, segments=segments)


def stored_metadata(
    doc: ConvertedDocument, given: dict[str, Any], existing: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The metadata a document is stored with: what its format says (a mail's sender and date) beneath
    the metadata the add is given; none given keeps what is stored (`existing`), the format's refreshed."""
    said = doc.metadata or {}
    if given:
        return {**said, **given} if said else given
    return {**(existing or {}), **said}
