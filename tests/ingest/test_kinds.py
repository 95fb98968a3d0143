"""The kinds of source: which kind a source is, and the cheap freshness check a search makes per hit."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from haiku_cli.ingest import kinds, pipeline
from haiku_cli.ingest.convert import convert_file, convert_text
from haiku_cli.ingest.convert.dispatch import file_uri
from haiku_cli.ingest.document import ConvertedDocument
from haiku_cli.ingest.kinds import Freshness, freshness, kind_of
from haiku_cli.ingest.kinds.base import Contents, ListRequest, Reading, Seen, SyncPlan
from haiku_cli.ingest.source_walk import FileChoice
from haiku_cli.ingest.stored import content_hash, stored_content
from haiku_cli.ingest.sync import sync_source
from haiku_cli.store import reads
from haiku_cli.store import source_tables as stored
from haiku_cli.store.blocking import wait
from haiku_cli.store.source_tables import FileState
from tests.ingest.support import new_db


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


# A kind of source the tests make up: `memo://NAME` holds the notes of a dict, one item per note.
_MEMOS: dict[str, dict[str, str]] = {}


@dataclass(frozen=True)
class _Note:
    uri: str


class _Memos:
    name = "memo"
    described = "memo:// addresses"
    polled = False
    listed_remotely = False

    def claims(self, source: str) -> bool:
        return source.startswith("memo://")

    def holds(self, item: object) -> bool:
        return isinstance(item, _Note)

    def key(self, source: str) -> str:
        return source

    def stored_uri(self, source: str) -> str:
        return source

    def display(self, source: str) -> str:
        return source

    def local_path(self, key: str) -> Path | None:
        return None

    def absent(self, source: str) -> str | None:
        return None

    def contents(self, source: str, request: ListRequest) -> Contents:
        notes = _MEMOS[source.removeprefix("memo://")]
        return Contents("folder", [_Note(f"{source}/{name}") for name in sorted(notes)])

    def label(self, item: Any) -> str:
        return str(item.uri)

    def uri(self, item: Any) -> str:
        return str(item.uri)

    def size(self, item: Any) -> int:
        return 0

    def read(self, item: Any, reading: Reading, fetched: Any | None = None) -> tuple[Seen, ConvertedDocument]:
        memo, name = item.uri.removeprefix("memo://").split("/")
        return Seen(item.uri), convert_text(_MEMOS[memo][name], uri=item.uri)

    def plan_sync(self, source, states, scope, reading, plan: SyncPlan) -> SyncPlan:
        listed = self.contents(source.source, ListRequest(FileChoice(), False, reading))
        notes = {note.uri: note for note in listed.entries}
        plan.items = [(i, note) for i, note in enumerate(notes.values())]
        plan.gone = [s for uri, s in states.items() if uri not in notes]
        return plan

    def freshness(self, state, content_hash=None, limits=None) -> Freshness:
        return Freshness.UNKNOWN


def test_a_new_kind_is_one_class_and_its_registration(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # add-src's planning, the in-process engine, the writer and sync know nothing of memo://.
    monkeypatch.setattr(kinds, "KINDS", (_Memos(), *kinds.KINDS))
    monkeypatch.setitem(
        _MEMOS,
        "birds",
        {"kestrel": "# Kestrel\n\nHovers over fields.", "heron": "# Heron\n\nStands in water."},
    )
    db = new_db(tmp_path, embedder)
    report = anyio.run(lambda: pipeline.add_sources(db, embedder, ["memo://birds"], title=None, metadata={}))
    assert {o.source: o.status for o in report.outcomes} == {
        "memo://birds/heron": "added",
        "memo://birds/kestrel": "added",
    }
    (source,) = stored.read_sources(db)
    assert (source.source, source.kind) == ("memo://birds", "folder")
    del _MEMOS["birds"]["heron"]

    async def get_embedder():
        return embedder

    done = anyio.run(lambda: sync_source(db, get_embedder, source))
    assert (done.deleted, done.unchanged + done.updated) == (1, 1)
    assert [d.uri for d in wait(reads.list_documents(db, limit=None))] == ["memo://birds/kestrel"]
