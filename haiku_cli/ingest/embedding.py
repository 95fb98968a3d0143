"""Embedding chunks: the text embedded for each (with its context), and the rows to store it becomes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from haiku_cli.store.records import NewChunk

if TYPE_CHECKING:
    import numpy as np

    from haiku_cli.embed import Embedder
    from haiku_cli.ingest.blocks import Span
    from haiku_cli.ingest.chunking import Chunk
    from haiku_cli.store.kept import Kept

# Chunks are embedded and written in batches of this many (a long document spans several), so memory
# holds the vectors of a few batches, never of a whole folder or a whole big file. The add as a whole
# stays one all-or-nothing write.
BATCH_CHUNKS = 512


def embedding_text(title: str | None, chunk: Chunk) -> str:
    """What is embedded for a chunk: its title and heading path give short chunks their context."""
    context = [p for p in [title, *chunk.heading_path] if p]
    return (" > ".join(context) + "\n\n" + chunk.text) if context else chunk.text


def span_fields(span: Span | None) -> dict[str, int | None]:
    """A chunk's place as the store's fields (all None when not known)."""
    if span is None:
        return {}
    return {
        "char_start": span.start,
        "char_end": span.end,
        "line_start": span.first_line,
        "line_end": span.last_line,
    }


async def embed_chunks(
    embedder: Embedder,
    titled: Sequence[tuple[str | None, Chunk]],
    on_progress: Callable[[int], None],
    kept: Sequence[Kept | None] | None = None,
    given: Sequence[np.ndarray | None] | None = None,
) -> list[NewChunk]:
    """Embed chunks (each with its document title) into rows to store, in order.

    `kept`, one per chunk: the stored chunk it keeps the id of, whose vector (when read, and made from
    the very text this chunk embeds) is reused instead of embedding the same text again. `given`, one per
    chunk: a vector already made from the text it embeds (by a cluster's worker), used as it is.
    """
    kept = kept or [None] * len(titled)
    given = given or [None] * len(titled)
    texts = [embedding_text(title, c) for title, c in titled]
    stored = [k.vector_for(t) if k is not None else None for k, t in zip(kept, texts, strict=True)]
    stored = [s if s is not None else g for s, g in zip(stored, given, strict=True)]
    missing = [i for i, v in enumerate(stored) if v is None]
    embedded = iter(
        await embedder.embed_documents([texts[i] for i in missing], on_progress=on_progress)
        if missing
        else []
    )
    if len(missing) < len(texts):
        on_progress(len(texts) - len(missing))
    vectors = [next(embedded) if v is None else v for v in stored]
    return new_chunks(titled, vectors, kept)


def new_chunks(
    titled: Sequence[tuple[str | None, Chunk]],
    vectors: Sequence[np.ndarray],
    kept: Sequence[Kept | None] | None = None,
) -> list[NewChunk]:
    """Chunks (each with its document title) and their vectors as rows to store (`kept`: ids kept)."""
    kept = kept or [None] * len(titled)
    return [
        NewChunk(
            id=k.id if k else None,
            order=c.order,
            text=c.text,
            heading_path=list(c.heading_path),
            pages=list(c.pages),
            **span_fields(c.span),
            search_text=embedding_text(title, c),
            vector=vector.tolist(),
        )
        for (title, c), vector, k in zip(titled, vectors, kept, strict=True)
    ]
