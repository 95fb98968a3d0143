"""Databases in older layouts, made as haiku made them: schema version 1 (chunk rows without their
document's fields), 2 (without their place in the document) and 3 (without their index terms), with
their chunks schemas spelled out."""

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


def chunks_schema_v2(dimension: int) -> pa.Schema:
    """The chunks table of schema version 2: version 1's, with its document's fields after its id."""
    v1 = list(chunks_schema_v1(dimension))
    copies = [pa.field(name, pa.string()) for name in ("document_uri", "document_title", "document_metadata")]
    return pa.schema([*v1[:2], *copies, *v1[2:]])


def chunks_schema_v3(dimension: int) -> pa.Schema:
    """The chunks table of schema version 3: version 2's, with its place in the document at the end."""
    return pa.schema([*chunks_schema_v2(dimension), *schema.span_fields()])


def create_v1_database(location: Location, embedder_name: str, dimension: int) -> None:
    """Create an empty version-1 database at a local location (documents, chunks, then meta last)."""
    _create(location, embedder_name, dimension, 1)


def create_v2_database(location: Location, embedder_name: str, dimension: int) -> None:
    """Create an empty version-2 database at a local location (documents, chunks, then meta last)."""
    _create(location, embedder_name, dimension, 2)


def create_v3_database(location: Location, embedder_name: str, dimension: int) -> None:
    """Create an empty version-3 database at a local location (documents, chunks, then meta last)."""
    _create(location, embedder_name, dimension, 3)


def _create(location: Location, embedder_name: str, dimension: int, version: int) -> None:
    conn = lancedb.connect(location.connect_uri)
    conn.create_table(schema.DOCUMENTS, schema=schema.documents_schema())
    chunks_schema = {1: chunks_schema_v1, 2: chunks_schema_v2, 3: chunks_schema_v3}[version](dimension)
    chunks = conn.create_table(schema.CHUNKS, schema=chunks_schema)
    create_fts_index(chunks)
    meta = [
        {"key": "schema_version", "value": str(version)},
        {"key": "embedder_name", "value": embedder_name},
        {"key": "embedder_dimension", "value": str(dimension)},
    ]
    conn.create_table(schema.META, data=meta, schema=schema.meta_schema())
