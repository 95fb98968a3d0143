"""Table names, Arrow schemas and the schema version of a haiku database."""

from __future__ import annotations

from typing import TYPE_CHECKING

# pyarrow is imported by the functions that build schemas: the table names above are what a server
# needs before its first search, and importing pyarrow costs a start-up a tenth of a CPU-second.
if TYPE_CHECKING:
    import pyarrow as pa

# 2: each chunk row carries its document's uri, title and metadata (DOCUMENT_FIELDS), so a search
# builds its hits without looking documents up. A version-1 database (chunks without them) is read
# and written as it is; `haiku vacuum` adds the copies in place (`rebuild` re-embeds in the new layout).
# 3: each chunk row says where it stands in its document (SPAN_FIELDS). A version-2 (or 1) database is
# read and written as it is, its chunks' places unknown; `haiku vacuum` adds the columns in place (empty:
# the chunks written from then on fill them), `rebuild` re-chunks into the new layout.
# 4: each chunk row holds the terms the full-text index makes of its search text (TERMS_FIELD), so
# full-text search over several databases rescores its candidates with the set's statistics without
# analysing their text again. An older database is read and written as it is, its candidates analysed
# at search time; `haiku vacuum` fills the column in place.
SCHEMA_VERSION = 4
DOCUMENTS = "documents"
CHUNKS = "chunks"
META = "meta"
# Tables created on first use, so that older databases open unchanged (no version bump): the sources
# `add-src` remembers, and the files each one held when last read (what `sync` compares against).
SOURCES = "sources"
SOURCE_FILES = "source_files"
# The pictures of documents (created by the first write that stores one).
PICTURES = "pictures"
# The directories of each remembered folder as its last sync listed them (store/source_dirs.py).
SOURCE_DIRS = "source_dirs"
SIDE_TABLES = (SOURCES, SOURCE_FILES, PICTURES, SOURCE_DIRS)

# A chunk's copy of its document's fields, by document field: written with the chunk, whenever its
# document is written (every change of a document rewrites its chunks).
DOCUMENT_FIELDS = {"uri": "document_uri", "title": "document_title", "metadata": "document_metadata"}
# Where a chunk stands in its document: characters [char_start, char_end) of the document's stored
# text, and lines line_start..line_end (1-based) of its source file, for line-based formats.
SPAN_FIELDS = ("char_start", "char_end", "line_start", "line_end")
# The search text's index terms (lower-cased, stemmed, without stop words), separated by spaces.
TERMS_FIELD = "search_terms"


def span_fields() -> list[pa.Field]:
    """The chunk columns of SPAN_FIELDS (null where unknown)."""
    import pyarrow as pa

    return [pa.field(name, pa.int32()) for name in SPAN_FIELDS]


def documents_schema() -> pa.Schema:
    """One row per document; `content` is the converted text the chunks were cut from."""
    import pyarrow as pa

    timestamp = pa.timestamp("us", tz="UTC")
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("uri", pa.string()),
            pa.field("title", pa.string()),
            pa.field("metadata", pa.string()),  # JSON object
            pa.field("content", pa.string()),
            pa.field("content_hash", pa.string()),
            pa.field("created_at", timestamp),
            pa.field("updated_at", timestamp),
        ]
    )


def chunks_schema(dimension: int) -> pa.Schema:
    """One row per chunk, with its embedding and its document's uri, title and metadata."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("document_id", pa.string(), nullable=False),
            pa.field("document_uri", pa.string()),
            pa.field("document_title", pa.string()),
            pa.field("document_metadata", pa.string()),  # JSON object, as the document's
            pa.field("order", pa.int32()),
            pa.field("text", pa.string()),
            # What full-text search indexes: the text with its document title and heading path, so a
            # query naming a section finds it, as the embedding (made from the same string) does.
            pa.field("search_text", pa.string()),
            pa.field("search_tokens", pa.int32()),  # its length in index terms, for global BM25
            pa.field("heading_path", pa.list_(pa.string())),
            pa.field("pages", pa.list_(pa.int32())),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
            *span_fields(),
            pa.field(TERMS_FIELD, pa.string()),
        ]
    )


def meta_schema() -> pa.Schema:
    """Key/value settings of the database (schema version, embedder, pending write)."""
    import pyarrow as pa

    return pa.schema([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string())])


def pictures_schema() -> pa.Schema:
    """One row per picture of a document: where it sits, what it shows, and its encoded bytes."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("document_id", pa.string(), nullable=False),
            pa.field("reference", pa.string(), nullable=False),  # unique within its document
            pa.field("page", pa.int32()),
            pa.field("box", pa.list_(pa.float32(), 4)),  # left, bottom, right, top in PDF points
            pa.field("width", pa.int32()),
            pa.field("height", pa.int32()),
            pa.field("format", pa.string()),  # png or jpeg
            pa.field("caption", pa.string()),
            pa.field("source", pa.string()),
            pa.field("size", pa.int64()),  # of `data`, so listings need not read the bytes
            pa.field("data", pa.large_binary()),
        ]
    )
