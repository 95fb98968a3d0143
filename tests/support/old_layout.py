"""A database in the schema-version-1 layout (chunk rows without their document's fields), made as haiku
made it before version 2: the tables and meta of that version, with its chunks schema spelled out here."""

from __future__ import annotations

import lancedb
import pyarrow as pa

from haiku_cli.store import schema
from haiku_cli.store.indexes import create_fts_index
from haiku_cli.store.location import Location


def chunks_schema_v1(dimension: int) -> pa.Schema:
    """The chunks table of schema version 1, as it was defined."""
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("document_id", pa.string(), nullable=False),
            pa.field("order", pa.int32()),
            pa.field("text", pa.string()),
            pa.field("search_text", pa.string()),
            pa.field("search_tokens", pa.int32()),
            pa.field("heading_path", pa.list_(pa.string())),
            pa.field("pages", pa.list_(pa.int32())),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
        ]
    )


def create_v1_database(location: Location, embedder_name: str, dimension: int) -> None:
    """Create an empty version-1 database at a local location (documents, chunks, then meta last)."""
    conn = lancedb.connect(location.connect_uri)
    conn.create_table(schema.DOCUMENTS, schema=schema.documents_schema())
    chunks = conn.create_table(schema.CHUNKS, schema=chunks_schema_v1(dimension))
    create_fts_index(chunks)
    meta = [
        {"key": "schema_version", "value": "1"},
        {"key": "embedder_name", "value": embedder_name},
        {"key": "embedder_dimension", "value": str(dimension)},
    ]
    conn.create_table(schema.META, data=meta, schema=schema.meta_schema())
