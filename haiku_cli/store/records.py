"""What the store hands out and takes in: documents and chunks as plain models."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class DocumentRecord(BaseModel):
    """A stored document (without its chunks)."""

    id: str
    uri: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    content: str = ""
    content_hash: str = ""
    created_at: datetime
    updated_at: datetime

    def summary(self) -> dict[str, Any]:
        """The JSON shape `list` prints: everything but the content."""
        return self.model_dump(mode="json", exclude={"content"})


class ChunkRecord(BaseModel):
    """A stored chunk (without its vector)."""

    id: str
    document_id: str
    order: int
    text: str
    heading_path: list[str] = Field(default_factory=list)
    pages: list[int] = Field(default_factory=list)


class NewChunk(BaseModel):
    """A chunk to be written, with its embedding."""

    order: int
    text: str
    heading_path: list[str] = Field(default_factory=list)
    pages: list[int] = Field(default_factory=list)
    search_text: str = ""  # defaults to `text`
    vector: list[float]


class DocumentWrite(BaseModel):
    """One document to insert, or to put in place of `replaces` (keeping its id and creation time)."""

    document: DocumentRecord
    chunks: list[NewChunk]
    replaces: DocumentRecord | None = None
