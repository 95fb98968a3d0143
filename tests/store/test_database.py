"""Opening, creating and guarding databases."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from haiku_cli.errors import DatabaseError, InputError
from haiku_cli.store import EmbedderSpec, Location, open_database
from haiku_cli.store import schema as store_schema
from haiku_cli.store.database import exists


def test_reading_a_missing_database_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    loc = Location("notes", str(tmp_path / "notes.lancedb"))
    with pytest.raises(DatabaseError, match="database 'notes' does not exist yet"):
        open_database(loc)
    assert not (tmp_path / "notes.lancedb").exists()


def test_created_on_first_write_with_meta(tmp_path: Path) -> None:
    loc = Location("notes", str(tmp_path / "notes.lancedb"))
    db = open_database(loc, create_with=EmbedderSpec("test:e", 4), writable=True)
    assert exists(loc)
    again = open_database(loc)
    assert again.embedder == EmbedderSpec("test:e", 4)
    assert again.schema_version == store_schema.SCHEMA_VERSION
    assert db.name == "notes"


def test_other_embedder_is_refused_naming_both(tmp_path: Path) -> None:
    loc = Location("notes", str(tmp_path / "notes.lancedb"))
    db = open_database(loc, create_with=EmbedderSpec("test:a", 4), writable=True)
    with pytest.raises(DatabaseError) as err:
        db.check_embedder(EmbedderSpec("test:b", 8))
    assert "test:a" in str(err.value) and "test:b" in str(err.value) and "'notes'" in str(err.value)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    loc = Location("notes", str(tmp_path / "notes.lancedb"))
    db = open_database(loc, create_with=EmbedderSpec("test:a", 4), writable=True)
    db.set_meta("schema_version", str(store_schema.SCHEMA_VERSION + 1))
    with pytest.raises(DatabaseError, match="newer than this haiku supports"):
        open_database(loc)


def test_read_only_database_refuses_writes(tmp_path: Path) -> None:
    loc = Location("notes", str(tmp_path / "notes.lancedb"), read_only=True)
    with pytest.raises(DatabaseError, match="read_only"):
        open_database(loc, create_with=EmbedderSpec("test:a", 4), writable=True)


def test_corrupt_database_is_a_clear_error(tmp_path: Path) -> None:
    loc = Location("notes", str(tmp_path / "notes.lancedb"))
    open_database(loc, create_with=EmbedderSpec("test:a", 4), writable=True)
    for f in (tmp_path / "notes.lancedb" / "documents.lance").rglob("*.manifest"):
        f.write_bytes(b"garbage")
    with pytest.raises(DatabaseError, match="database 'notes' cannot be opened"):
        open_database(loc)


def test_creating_in_a_folder_of_other_files_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("mine")
    with pytest.raises(InputError, match=f"{folder} is an existing folder that is not a haiku database"):
        open_database(Location("notes", str(folder)), create_with=EmbedderSpec("test:e", 4), writable=True)
    assert [p.name for p in folder.iterdir()] == ["todo.txt"]


def test_an_empty_folder_or_a_half_created_database_is_fine_to_create_in(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".DS_Store").write_bytes(b"\0")  # left by a file manager that showed the folder
    open_database(Location("empty", str(empty)), create_with=EmbedderSpec("test:e", 4), writable=True)
    half = tmp_path / "half.lancedb"
    open_database(Location("half", str(half)), create_with=EmbedderSpec("test:e", 4), writable=True)
    shutil.rmtree(half / f"{store_schema.META}.lance")  # the first write died before marking it created
    db = open_database(Location("half", str(half)), create_with=EmbedderSpec("test:e", 4), writable=True)
    assert exists(db.location)
