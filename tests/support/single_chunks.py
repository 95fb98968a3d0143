"""A small database of one-chunk documents with chosen texts and vectors, written through the store."""

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from haiku_cli.store import DocumentRecord, DocumentWrite, EmbedderSpec, Location, NewChunk, open_database
from haiku_cli.store.database import Database
from haiku_cli.store.document_writes import new_id, write_documents

# A small vocabulary whose words repeat across texts, so BM25 statistics differ between databases.
WORDS = [
    "river",
    "delta",
    "sediment",
    "flood",
    "basin",
    "estuary",
    "tide",
    "channel",
    "levee",
    "marsh",
    "silt",
    "bank",
    "current",
]


def word_texts(rng: np.random.Generator, count: int) -> list[str]:
    """`count` texts of 4 to 13 words drawn from WORDS."""
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(4, 14)))) for _ in range(count)]


def single_chunk_database(path: Path, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> Database:
    """A new database at `path` holding one document per text, titled d0, d1, ..., each one chunk."""
    db = open_database(Location("t", str(path)), create_with=EmbedderSpec("t:e", len(vectors[0])))
    write_documents(
        db,
        [one_chunk_write(f"d{i}", text, v) for i, (text, v) in enumerate(zip(texts, vectors, strict=True))],
    )
    return db


def one_chunk_write(title: str, text: str, vector: Sequence[float]) -> DocumentWrite:
    """A document of one chunk, to write."""
    now = datetime.now(UTC)
    doc = DocumentRecord(
        id=new_id(), uri=None, title=title, content=text, content_hash=title, created_at=now, updated_at=now
    )
    return DocumentWrite(
        document=doc, chunks=[NewChunk(order=0, text=text, vector=[float(x) for x in vector])]
    )
