"""What the store hands out and takes in: documents and chunks as plain models."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


def _utc(value: datetime) -> datetime:
    # A naive time is the local clock's (as some LanceDB version listings give it).
    return value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_utc)]
"""A timestamp held (and printed as ISO 8601) in UTC."""


# Built on first use: a command validates a handful of these, and compiling every one at import costs
# a fresh command more CPU than the few it uses.
_LAZY = ConfigDict(defer_build=True)


class DocumentSummary(BaseModel):
    """A stored document's identity and metadata, without its content."""

    model_config = _LAZY

    id: str
    uri: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    content_hash: str = ""
    created_at: UtcDatetime
    updated_at: UtcDatetime


class DocumentRecord(DocumentSummary):
    """A stored document (without its chunks)."""

    content: str = ""

    def summary(self) -> DocumentSummary:
        """The document without its content."""
        return DocumentSummary.model_validate(self.model_dump(exclude={"content"}))


class ChunkSpan(BaseModel):
    """Where a chunk stands in its document: characters [char_start, char_end) of the document's text,
    and lines line_start..line_end (1-based) of its source file; None where unknown (a chunk written
    before haiku recorded them, or lines of a format not read by lines)."""

    model_config = _LAZY

    char_start: int | None = None
    char_end: int | None = None
    line_start: int | None = None
    line_end: int | None = None


class ChunkRecord(ChunkSpan):
    """A stored chunk (without its vector)."""

    id: str
    document_id: str
    order: int
    text: str
    heading_path: list[str] = Field(default_factory=list)
    pages: list[int] = Field(default_factory=list)


class NewChunk(ChunkSpan):
    """A chunk to be written, with its embedding; `id` None gets a fresh id (a rebuild passes a kept one)."""

    id: str | None = None
    order: int
    text: str
    heading_path: list[str] = Field(default_factory=list)
    pages: list[int] = Field(default_factory=list)
    search_text: str = ""  # defaults to `text`
    vector: list[float]


class PictureMark(BaseModel):
    """A picture a chunk covers, as its marker names it: its reference in the document, and its caption."""

    model_config = _LAZY

    reference: str
    caption: str = ""


class PictureInfo(BaseModel):
    """A stored picture without its bytes: its document, reference, place, size and caption."""

    model_config = _LAZY

    document_id: str
    reference: str
    page: int | None = None
    box: list[float] | None = None  # left, bottom, right, top in PDF points on `page`
    width: int
    height: int
    format: str
    caption: str = ""
    source: str = ""
    size: int  # bytes of the encoded picture


class PictureRecord(PictureInfo):
    """A stored picture with its encoded bytes."""

    data: bytes = Field(repr=False)

    def info(self) -> PictureInfo:
        """The picture without its bytes."""
        return PictureInfo.model_validate(self.model_dump(exclude={"data"}))


class DocumentWrite(BaseModel):
    """One document to insert, or to put in place of `replaces` (keeping its id and creation time)."""

    model_config = _LAZY

    document: DocumentRecord
    chunks: list[NewChunk]
    replaces: DocumentRecord | None = None
    pictures: list[PictureRecord] = Field(default_factory=list)  # document_id is set when written
