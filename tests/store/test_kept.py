"""Stored chunks handed on to identical new chunks: ids in order of occurrence, vectors only when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from haiku_cli.store import EmbedderSpec, Location, open_database, reads
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_writes import write_documents
from haiku_cli.store.kept import KeptIds
from tests.store.test_document_writes import _write


@pytest.fixture
def db(tmp_path: Path):
    spec = EmbedderSpec("test:e", 4)
    return open_database(Location("t", str(tmp_path / "t.lancedb")), create_with=spec, writable=True)


def test_ids_of_several_documents_with_vectors_only_for_those_asked(db) -> None:
    a, b = _write("alpha", n_chunks=3), _write("beta", n_chunks=2)
    write_documents(db, [a, b])
    stored = wait(reads.chunks_of_documents(db, [a.document.id, b.document.id]))
    kept = KeptIds(db, [a.document.id, b.document.id], vectors_of={a.document.id})
    got = kept.take(a.document.id, "alpha part 2", [], [])
    assert got is not None and got.id == stored[a.document.id][2].id
    assert got.vector is not None and got.vector.tolist() == [1.0, 0.0, 0.0, 2.0]
    other = kept.take(b.document.id, "beta part 0", [], [])
    assert other is not None and (other.id, other.vector) == (stored[b.document.id][0].id, None)
    # Each stored chunk once; another document's text, heading path or pages is not the same chunk.
    assert kept.take(a.document.id, "alpha part 2", [], []) is None
    assert kept.take(a.document.id, "beta part 1", [], []) is None
    assert kept.take(b.document.id, "beta part 1", ["Heading"], []) is None
    assert kept.take(b.document.id, "beta part 1", [], [1]) is None
    assert kept.take(b.document.id, "beta part 1", [], []) is not None
