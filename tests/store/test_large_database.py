"""A database grows past the vector-index threshold through add-src, add and rebuild, and stays searchable."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from haiku_cli.ingest.chunking import Chunk
from haiku_cli.ingest.embedding import embedding_text
from haiku_cli.store import (
    DocumentRecord,
    DocumentWrite,
    EmbedderSpec,
    Location,
    NewChunk,
    indexes,
    open_database,
)
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_writes import new_id, write_documents
from haiku_cli.store.indexes import VECTOR_INDEX, index_states
from tests.support.hash_embedder import hash_vectors, serve_hash_embedder

pytestmark = pytest.mark.slow

SECTIONS = 10  # one chunk per section
DIMENSION = 64
EMBEDDER = "ollama:hash"
# The threshold, lowered from 10k rows: what is proven is crossing it, and each of the three index builds
# below costs in proportion to the rows.
THRESHOLD = 2_500


def _sentence(doc: int, sec: int) -> str:
    # Words unique to this chunk (for both the hashed vectors and full text), plus shared filler.
    return f"marker{doc}x{sec} note{doc}n{sec} item{doc}i{sec} tag{doc} kind{sec % 7} in the valley."


def _chunk_text(title: str, doc: int, sec: int) -> str:
    # The very text a chunk's vector is made from: with a hashing embedder, only that is unambiguous.
    return embedding_text(title, Chunk(sec, _sentence(doc, sec), [title, f"Part {sec}"], []))


def _markdown(title: str, doc: int, sections: int = SECTIONS) -> str:
    body = "".join(f"## Part {s}\n\n{_sentence(doc, s)}\n\n" for s in range(sections))
    return f"# {title}\n\n{body}"


def _bulk(db_path: Path, docs: range) -> None:
    """Documents written as `add-src` would write them, without converting files or a server round trip."""
    db = open_database(Location("big", str(db_path)), create_with=EmbedderSpec(EMBEDDER, DIMENSION))
    writes = []
    for doc in docs:
        title, now = f"Report {doc}", datetime.now(UTC)
        record = DocumentRecord(
            id=new_id(), uri=f"file:///bulk/doc{doc}.md", title=title, content=_markdown(title, doc),
            content_hash=str(doc), created_at=now, updated_at=now,
        )  # fmt: skip
        texts = [_chunk_text(title, doc, s) for s in range(SECTIONS)]
        chunks = [
            NewChunk(order=s, text=_sentence(doc, s), heading_path=[title, f"Part {s}"], search_text=text,
                     vector=vector.tolist())
            for s, (text, vector) in enumerate(zip(texts, hash_vectors(texts, DIMENSION), strict=True))
        ]  # fmt: skip
        writes.append(DocumentWrite(document=record, chunks=chunks))
    write_documents(db, writes)


def _top(cli: Callable[..., object], db: str, query: str, kind: str) -> dict:
    result = cli("search", query, "--db", db, "--type", kind, "-n", "3", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["hits"][0]


def _vector_index(db_path: Path) -> tuple[int, int] | None:
    db = open_database(Location("big", str(db_path)))
    for state in wait(index_states(db.chunks)):
        if state.name == VECTOR_INDEX:
            return state.indexed_rows, state.unindexed_rows
    return None


def test_database_grows_past_the_vector_index_threshold(
    cli, write_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexes, "VECTOR_INDEX_MIN_ROWS", THRESHOLD)
    below = THRESHOLD // SECTIONS - 10  # documents that stay just under the threshold
    db_path = tmp_path / "big.lancedb"
    db = str(db_path)
    _bulk(db_path, range(below))
    assert _vector_index(db_path) is None  # small enough for exact search
    folder = tmp_path / "more"
    folder.mkdir()
    for doc in range(below, below + 30):
        (folder / f"doc{doc}.md").write_text(_markdown(f"Report {doc}", doc), encoding="utf-8")

    with serve_hash_embedder(dimension=DIMENSION) as url:
        write_config(f'[embedder]\nmodel = "{EMBEDDER}"\nbase_url = "{url}"\n')
        # `add-src` is the write that crosses the threshold and builds the index...
        assert cli("add-src", str(folder), "--db", db).exit_code == 0
        total = THRESHOLD + 200
        assert _vector_index(db_path) == (total, 0)
        # ...and a later `add` is searchable at once and folded into it.
        added = cli("add", _markdown("Late", 99999, 40), "--db", db, "--title", "Late")
        assert added.exit_code == 0, added.stderr
        total += 40
        assert _vector_index(db_path) == (total, 0)

        for kind in ("vector", "hybrid", "fts"):
            hit = _top(cli, db, _chunk_text(f"Report {below + 7}", below + 7, 4), kind)
            assert hit["document_uri"].endswith(f"doc{below + 7}.md"), kind
            assert _sentence(below + 7, 4) in hit["content"]
            hit = _top(cli, db, _chunk_text("Report 77", 77, 3), kind)
            assert hit["document_uri"].endswith("doc77.md"), kind
            assert _top(cli, db, _chunk_text("Late", 99999, 33), kind)["document_title"] == "Late"

        rebuilt = cli("rebuild", "--db", db)
        assert rebuilt.exit_code == 0, rebuilt.stderr
        assert _vector_index(db_path) == (total, 0)
        middle = below // 2
        for kind in ("vector", "hybrid"):
            hit = _top(cli, db, _chunk_text(f"Report {middle}", middle, 9), kind)
            assert hit["document_uri"].endswith(f"doc{middle}.md"), kind
