"""Shared by the add and rebuild tests: a database, documents to add, and embedders that fail or record."""

from __future__ import annotations

from pathlib import Path

from haiku_cli.errors import ModelError
from haiku_cli.store import EmbedderSpec, Location, open_database
from tests.support.old_layout import create_v1_database


class FailingAfter:
    """The real embedder, made to fail (as a dead embedding server would) after some batches."""

    def __init__(self, real, batches: int) -> None:
        self._real = real
        self._left = batches
        self.name, self.dimension, self.max_tokens = real.name, real.dimension, real.max_tokens
        self.count_tokens = real.count_tokens

    async def embed_documents(self, texts, on_progress=None):
        if self._left == 0:
            raise ModelError("cannot reach embedding model test: Connection error.")
        self._left -= 1
        return await self._real.embed_documents(texts, on_progress=on_progress)

    async def resolve_dimension(self) -> int:
        return self.dimension


class Recording:
    """The real embedder, recording how many texts each call embeds (what a rebuild holds at once)."""

    def __init__(self, real) -> None:
        self._real = real
        self.calls: list[int] = []
        self.name, self.dimension, self.max_tokens = real.name, real.dimension, real.max_tokens
        self.count_tokens = real.count_tokens

    async def embed_documents(self, texts, on_progress=None):
        self.calls.append(len(texts))
        return await self._real.embed_documents(texts, on_progress=on_progress)

    async def resolve_dimension(self) -> int:
        return self.dimension


def docs_folder(tmp_path: Path, n: int) -> Path:
    """A folder of `n` short Markdown documents, one paragraph each."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(n):
        (folder / f"d{i}.md").write_text(f"# Doc {i}\n\nParagraph about topic number {i}.\n")
    return folder


def new_db(tmp_path: Path, embedder, layout: str = "current"):
    """A new writable database for `embedder`, in the current layout or that of schema version 1."""
    loc = Location("t", str(tmp_path / "t.lancedb"))
    if layout == "v1":  # made by a haiku of schema version 1: chunks without their documents' fields
        create_v1_database(loc, embedder.name, embedder.dimension)
    return open_database(loc, create_with=EmbedderSpec(embedder.name, embedder.dimension), writable=True)


def sections(*sizes: int) -> str:
    """A Markdown document of one section per size: that many sentences of section-specific words."""
    return "\n\n".join(
        f"# Part {i}\n\n" + " ".join(f"Sentence {j} of part {i} says something." for j in range(n))
        for i, n in enumerate(sizes)
    )


def chunks_by_id(db) -> dict[str, tuple[str, str, list[int]]]:
    """Every chunk id with its document id, text and pages."""
    rows = db.chunks.to_arrow().select(["id", "document_id", "text", "pages"]).to_pylist()
    return {r["id"]: (r["document_id"], r["text"], r["pages"]) for r in rows}


def vectors_by_id(db) -> dict[str, list[float]]:
    """Every chunk id with its stored vector."""
    return {r["id"]: r["vector"] for r in db.chunks.to_arrow().select(["id", "vector"]).to_pylist()}


def small_batches(monkeypatch, chunks: int, commit_every: int | None = None) -> None:
    """Batches of `chunks` chunks, committed every `commit_every` chunks (default: each batch on its own),
    so that a few small documents make an add of several commits."""
    from haiku_cli.ingest import ingestor
    from haiku_cli.store import document_writes

    monkeypatch.setattr(ingestor, "BATCH_CHUNKS", chunks)
    monkeypatch.setattr(document_writes, "COMMIT_ROWS", commit_every or chunks)
    # Held writes unbounded in time (not [ingest]'s).
    monkeypatch.setattr(document_writes.HeldWrites, "bound", lambda self, rows, seconds: None)
