"""Tags at the store: the automatic cleanup keeps what a tag names, and a tagged handle never writes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from haiku_cli.errors import DatabaseError
from haiku_cli.store import Location, open_database, reads
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_writes import write_documents
from haiku_cli.store.maintenance import cleanup_superseded
from haiku_cli.store.tags import create_tag, read_at
from tests.store.test_maintenance import DIM, EmbedderSpec, _writes


def test_the_automatic_cleanup_keeps_every_tagged_version(tmp_path: Path) -> None:
    location = Location("t", str(tmp_path / "t.lancedb"))
    db = open_database(location, create_with=EmbedderSpec("t:e", DIM))
    write_documents(db, _writes(3, 2, seed=0))
    create_tag(db, "three")
    for seed in range(1, 4):
        write_documents(db, _writes(2, 2, seed=seed))
    cleanup_superseded(db, keep=timedelta(0))  # as a write does once versions pile up
    assert len(db.documents.list_versions()) < 8  # it did remove the untagged ones
    reader = open_database(location)
    read_at(reader, "three")
    assert wait(reads.count_documents(reader)) == 3 and wait(reads.count_chunks(reader)) == 6
    with pytest.raises(DatabaseError, match=r"open at tag 'three'.*cannot be written"):
        write_documents(reader, _writes(1, 1, seed=9))
    assert wait(reads.count_documents(open_database(location))) == 9
