"""The kinds of source: which kind a source is, and the cheap freshness check a search makes per hit."""

from __future__ import annotations

import os
from pathlib import Path

from haiku_cli.ingest.convert import convert_file
from haiku_cli.ingest.convert.dispatch import file_uri
from haiku_cli.ingest.kinds import Freshness, freshness, kind_of
from haiku_cli.ingest.stored import content_hash, stored_content
from haiku_cli.store.sources import FileState


def _state(path: Path) -> tuple[FileState, str]:
    """A file's state and content hash as an add stores them."""
    found = path.stat()
    doc = convert_file(path)
    digest = content_hash(stored_content(doc), [p.data for p in doc.pictures])
    return FileState(str(path.parent), file_uri(path), "doc", found.st_size, found.st_mtime_ns), digest


def test_each_source_is_claimed_by_its_kind() -> None:
    assert kind_of("https://example.org/a").name == "url"
    assert kind_of("s3://lab/notes/").name == "s3"
    assert kind_of("notes/a.md").name == kind_of("file:///tmp/a.md").name == "local"
    assert kind_of("notes").local_path(kind_of("notes").key("notes")) == Path(os.path.abspath("notes"))
    assert kind_of("s3://lab/notes/").local_path("s3://lab/notes/") is None


def test_a_local_file_is_fresh_changed_or_missing(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text("# Alpha\n\nApples grow on trees.\n")
    state, digest = _state(path)
    assert freshness(state, digest) == Freshness.FRESH
    os.utime(path, ns=(state.mtime_ns + 10**9, state.mtime_ns + 10**9))  # touched, same text
    assert freshness(state) == Freshness.CHANGED  # by size and time alone
    assert freshness(state, digest) == Freshness.FRESH  # its content is what was stored
    path.write_text("# Alpha\n\nApples grow on trees, and pears.\n")
    assert freshness(state, digest) == Freshness.CHANGED
    path.unlink()
    assert freshness(state, digest) == Freshness.MISSING
    path.mkdir()  # a directory where the file was
    assert freshness(state, digest) == Freshness.MISSING


def test_remote_items_are_unknown_unless_asked() -> None:
    for uri in ("https://example.org/a", "s3://lab/notes/a.md"):
        assert freshness(FileState(uri, uri, "doc", 1, 1, etag="x")) == Freshness.UNKNOWN
