"""Storage: haiku databases on LanceDB (documents, chunks, meta), with all-or-nothing writes."""

from haiku_cli.store.database import Database, EmbedderSpec, exists, open_database
from haiku_cli.store.location import Location
from haiku_cli.store.records import ChunkRecord, DocumentRecord, DocumentWrite, NewChunk

__all__ = [
    "ChunkRecord",
    "Database",
    "DocumentRecord",
    "DocumentWrite",
    "EmbedderSpec",
    "Location",
    "NewChunk",
    "exists",
    "open_database",
]
