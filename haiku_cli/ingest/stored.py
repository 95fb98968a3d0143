"""The text stored for a document (its pages kept apart) and the hash that tells whether it changed."""

from __future__ import annotations

import hashlib

from haiku_cli.ingest.document import ConvertedDocument, Segment

PAGE_BREAK = "\f"


def content_hash(text: str) -> str:
    """The hash that decides whether a re-added source changed."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stored_content(doc: ConvertedDocument) -> str:
    """The text stored for a document; each page ends with a form feed so rebuild can recover pages."""
    if any(s.page is not None for s in doc.segments):
        return "".join(s.text + PAGE_BREAK for s in doc.segments)
    return doc.text


def from_stored(uri: str | None, title: str | None, content: str) -> ConvertedDocument:
    """Rebuild a converted document from stored content (the inverse of `stored_content`)."""
    if content.endswith(PAGE_BREAK):
        pages = content[: -len(PAGE_BREAK)].split(PAGE_BREAK)
        segments = [Segment(text, page=i) for i, text in enumerate(pages, start=1)]
    else:
        segments = [Segment(content)]
    return ConvertedDocument(uri=uri or "", title=title, segments=segments)
