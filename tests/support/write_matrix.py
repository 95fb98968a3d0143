"""The crash-and-interrupt matrix: a hypothesis state machine running random short sequences of write
commands against a real database, each perhaps interrupted at a checkpoint the code declares:

- `ctrl-c`: Ctrl-C in this process (the command's scope is cancelled there);
- `fault`: a failure raised there;
- `kill`: a real `haiku` process killed with SIGKILL there;
- `sigint`: a real `haiku` process sent SIGINT there (its Ctrl-C line is checked against the database);
- `disk-full`: a real `haiku` process writing to a disk filled up to its last few kilobytes.

After each step the database holds exactly what was acknowledged (and what a Ctrl-C line said it kept),
every chunk has its document and every document its chunks, the sources remembered are the ones
acknowledged, and the next writer leaves no journal. tests/databases/test_write_matrix.py runs it in CI;
benchmarks/crash_soak.py runs it for longer.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.from_thread
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from haiku_cli import api
from haiku_cli.errors import DatabaseError, HaikuError
from haiku_cli.store import open_database, reads
from haiku_cli.store.blocking import wait
from haiku_cli.store.handle import PENDING_WRITE
from haiku_cli.store.location import Location
from haiku_cli.store.writer_lock import exclusive
from tests.support import interrupting

# Every checkpoint a write of this matrix passes (store.writer_lock.checkpoint), by the modules naming it.
# (`places-dropped` fills in old chunks' places, `fragments-commit` is Ray's, `publish-*` publishing's:
# their own tests interrupt them.)
CHECKPOINTS = [
    "journal-written",
    "data-written",
    "before-commit",
    "tag-restored",
    "rebuild-batch",
    "committed",
]
_MODULES = ["transaction", "document_writes", "tags", "new_chunks_table", "maintenance"]
_AFTER_COMMIT = {"tag-restored", "committed"}
_WORDS = ["heron", "plover", "egret", "kestrel", "osprey", "curlew"]
ROOM_KIB = [0, 16, 64, 256, 1024]  # what a full disk has left

KINDS = ["ctrl-c", "fault", "kill", "sigint", "disk-full"]
_changes = st.lists(st.tuples(st.booleans(), st.sampled_from(_WORDS)), max_size=3)
_KEPT = re.compile(r"kept (?:all )?([\d,]+) documents? \(([\d,]+) chunks?\)")

Model = dict[str, str]  # the document's uri (or title) -> its content hash


def interruptions_of(kinds: list[str]) -> st.SearchStrategy:
    """None (run whole) half the time, else one of `kinds` alike: (kind, checkpoint), or
    ("disk-full", the kilobytes left)."""

    def where(kind: str) -> st.SearchStrategy:
        places = st.sampled_from(ROOM_KIB) if kind == "disk-full" else st.sampled_from(CHECKPOINTS)
        return st.tuples(st.just(kind), places)

    return st.none() | st.sampled_from(kinds).flatmap(where)


# Each machine draws from its class's `interruptions`.
_INTERRUPTION = st.runner().flatmap(lambda machine: machine.interruptions)


class _Interrupt:
    """Stands in for `checkpoint`: at `point`, presses Ctrl-C (cancels the command) or fails."""

    def __init__(self, how: str, point: str, scope: anyio.CancelScope) -> None:
        self.how, self.point, self.scope, self.fired = how, point, scope, False

    def __call__(self, point: str, spec: str | None = None) -> None:
        if point != self.point or self.fired:
            return
        self.fired = True
        if self.how == "fault":
            raise DatabaseError(f"database 'm' cannot be written: a fault injected at {point}")
        try:
            anyio.from_thread.run_sync(self.scope.cancel)  # from a worker thread
        except RuntimeError:
            self.scope.cancel()  # on the event loop's own thread


def _hash_of_file(path: Path) -> str:
    from haiku_cli.config.settings import IngestSettings
    from haiku_cli.ingest.convert import convert_file

    return _hash(convert_file(path, IngestSettings()))


def _hash_of_text(text: str, title: str) -> str:
    from haiku_cli.ingest.convert import convert_text

    return _hash(convert_text(text, title=title))


def _hash(doc: Any) -> str:
    from haiku_cli.ingest.stored import content_hash, stored_content

    return content_hash(stored_content(doc), [p.data for p in doc.pictures])


def _number(text: str) -> int:
    return int(text.replace(",", ""))


class WriteMatrix(RuleBasedStateMachine):
    """The matrix against a local database; `kinds` says which interruptions it draws."""

    embedder: ClassVar[Any] = None
    # steps, interruptions by kind and commands run (`add-src`, `tag create`...): the soak prints them, and
    # the CI run checks it drew every kind of interruption
    counts: ClassVar[Counter[str]] = Counter()
    interruptions: ClassVar[st.SearchStrategy] = interruptions_of(KINDS)

    def __init__(self) -> None:
        super().__init__()
        self.counts["examples"] += 1
        self.root = Path(tempfile.mkdtemp(prefix="matrix-"))
        self.folder = self.root / "src"
        self.folder.mkdir()
        self.location = self.make_location()
        self.ws = api.Workspace.load(embedder=self.embedder)
        self.model: Model = {}
        self.sources: set[str] = set()
        self.tags: dict[str, tuple[Model, set[str]]] = {}
        self.names = itertools.count()
        self.env = dict(os.environ)

    def make_location(self) -> Location:
        return Location(name="m", uri=str(self.root / "m.lancedb"))

    def target(self) -> list[str]:
        """The options naming the database to a `haiku` process."""
        return ["--db", self.location.uri]

    def teardown(self) -> None:
        self.ws.pool.forget(self.location)
        shutil.rmtree(self.root, ignore_errors=True)

    # -- running a command -------------------------------------------------------------------------

    def _run(self, call: Any, interrupt: tuple[str, str] | None) -> tuple[bool, list[api.WriteOutcome]]:
        """Run `call(ws)` (perhaps interrupted); whether it finished, and the writes that ended meanwhile."""
        mark = api.write_mark()
        finished = False
        patched = pytest.MonkeyPatch()

        async def go() -> None:
            nonlocal finished
            with anyio.CancelScope() as scope:
                if interrupt is not None:
                    hook = _Interrupt(*interrupt, scope)
                    for module in _MODULES:
                        patched.setattr(f"haiku_cli.store.{module}.checkpoint", hook)
                try:
                    await call(self.ws)
                    finished = not scope.cancel_called
                except HaikuError:
                    pass

        try:
            anyio.run(go)
        finally:
            patched.undo()
        return finished, api.writes_since(mark)

    def _command(
        self, args: list[str], call: Any, interrupt: Any, done: Model, sources: set[str] | None = None
    ) -> None:
        """Run one write command, perhaps interrupted, then settle what the database must hold: `done`
        (with `sources` remembered) once it committed, the state before if it did not."""
        sources = self.sources if sources is None else sources
        kind = interrupt[0] if interrupt is not None else "whole"
        self.counts["steps"] += 1
        self.counts[kind] += 1
        self.counts[" ".join(args[:2]) if args[0] == "tag" else args[0]] += 1
        if kind in ("whole", "ctrl-c", "fault"):
            self._after(*self._run(call, interrupt), done, sources)
            return
        gate = self.root / f"gate-{next(self.names)}"
        command = [*args, *self.target()]
        if kind == "kill":
            ended = interrupting.killed(command, interrupt[1], gate, self.env)
            self._forget_handles()
            committed = ended.code == 0 or (ended.reached and interrupt[1] in _AFTER_COMMIT)
            self._settle(committed, done, sources)
        elif kind == "sigint":
            ended = interrupting.interrupted(command, interrupt[1], gate, self.env)
            self._forget_handles()
            self._claimed(ended, done, sources)
        else:
            ended = interrupting.on_full_disk(args, Path(self.location.uri), interrupt[1], self.env)
            self._forget_handles()
            self._settle(interrupting.stored_on_full_disk(ended), done, sources)

    def _forget_handles(self) -> None:
        self.ws.pool.forget(self.location)  # its handle may name tables the other process made

    def _settle(self, committed: bool | None, done: Model, sources: set[str]) -> None:
        """The model after an all-or-nothing command: `done` if committed, else as before; None: either
        (the command's end does not say), and the database says which."""
        if committed is None:
            stored = self._stored()
            assert stored in (self.model, done), (stored, self.model, done)
            committed = stored == done and self._stored_sources() == sources
        if committed:
            self.model, self.sources = done, sources

    def _after(self, finished: bool, ended: list[api.WriteOutcome], done: Model, sources: set[str]) -> None:
        """The model after a command run here: `done` if it finished or committed; else what the write
        that Ctrl-C cut said it kept."""
        if finished or any(o.stored for o in ended):
            self.model, self.sources = done, sources
            return
        self._kept(ended[-1].documents if ended else 0, None, done)

    def _kept(self, documents: int, chunks: int | None, done: Model) -> None:
        """An interrupted write that says it kept `documents` (with `chunks`): the stored documents that
        are new are that many, each whole and as the command would have stored it."""
        stored = self._stored()
        new = {k: v for k, v in stored.items() if self.model.get(k) != v}
        assert len(new) == documents, (new, documents)
        assert all(done.get(k) == v or v in done.values() for k, v in new.items())  # each whole, current
        if chunks is not None:
            assert self._chunks_of(set(new)) == chunks, (new, chunks)
        self.model, self.sources = stored, self._stored_sources()

    def _claimed(self, ended: interrupting.Ended, done: Model, sources: set[str]) -> None:
        """A command sent Ctrl-C: what its line says stands is what the database holds."""
        if ended.code == 0:
            self._settle(True, done, sources)
            return
        line = ended.last_line
        assert ended.code == 130, ended.stderr
        assert line.startswith("haiku: interrupted"), ended.stderr
        if "was stored" in line or "stored the changes of" in line:
            if (kept := _KEPT.search(line)) is not None:  # `kept all 3 documents (3 chunks) it wrote`
                self._kept(_number(kept[1]), _number(kept[2]), done)
            assert self._stored() == done, line
            self._settle(True, done, sources)
        elif (kept := _KEPT.search(line)) is not None:
            self._kept(_number(kept[1]), _number(kept[2]), done)
        else:
            assert "kept nothing" in line or "nothing was" in line, line  # each line says what stands
            self._settle(False, done, sources)

    # -- what is stored ------------------------------------------------------------------------------

    def exists(self) -> bool:
        return (self.root / "m.lancedb").exists()

    def _reader(self) -> Any:
        """A reader of the database (with a journal pending, of the state before it), or None."""
        return open_database(self.location) if self.exists() else None

    def _documents(self) -> list[Any]:
        db = self._reader()
        return [] if db is None else wait(reads.list_documents(db, limit=None))

    def _stored(self) -> Model:
        return {d.uri or d.title or "": d.content_hash for d in self._documents()}

    def _stored_sources(self) -> set[str]:
        from haiku_cli.store.source_tables import read_sources

        db = self._reader()
        return set() if db is None else {s.source for s in read_sources(db)}

    def _claimed_by(self, source: str) -> set[str]:
        """The documents (by key) a remembered source claims, as stored."""
        from haiku_cli.store.source_tables import file_states

        db = self._reader()
        ids = set() if db is None else {state.document_id for state in file_states(db, source)}
        return {d.uri or d.title or "" for d in self._documents() if d.id in ids}

    def _chunks_of(self, keys: set[str]) -> int:
        ids = [d.id for d in self._documents() if (d.uri or d.title or "") in keys]
        db = self._reader()
        if db is None or not ids:
            return 0
        owners = wait(reads.rows_where(db, db.chunks, None, ["document_id"])).column("document_id")
        return sum(1 for owner in owners.to_pylist() if owner in ids)

    # -- rules ---------------------------------------------------------------------------------------

    @initialize()
    def start(self) -> None:
        self._write_file("first")

    def _write_file(self, word: str) -> None:
        name = f"{word}{next(self.names)}.md"
        (self.folder / name).write_text(f"# {word.title()}\n\nThe {word} at the estuary, note {name}.\n")

    def _change_files(self, changes: list[tuple[bool, str]]) -> None:
        """Write a new file (True) or remove one (False, keeping at least one) before a command."""
        for write, word in changes:
            files = sorted(self.folder.iterdir())
            if write or len(files) < 2:
                self._write_file(word)
            else:
                files[len(word) % len(files)].unlink()

    def _folder_model(self) -> Model:
        """The documents once the folder's files are stored; a document of a file gone goes only if the
        source claims it (one kept by `forget-src --keep-documents` is no longer synced)."""
        files = {p.as_uri(): _hash_of_file(p) for p in sorted(self.folder.iterdir())}
        claimed = self._claimed_by(self._folder_source())
        others = {k: v for k, v in self.model.items() if k not in claimed}
        return {**others, **files}

    def _folder_source(self) -> str:
        from haiku_cli.ingest.remembering import source_key
        from haiku_cli.ingest.source_walk import as_source

        return source_key(as_source(str(self.folder)))

    @rule(word=st.sampled_from(_WORDS), interrupt=_INTERRUPTION)
    def add_text(self, word: str, interrupt: Any) -> None:
        title = f"{word} {next(self.names)}"
        text = f"A {word} seen over the mudflats ({title})."
        done = {**self.model, title: _hash_of_text(text, title)}
        call = lambda ws: api.add_text(ws, self.location, text, title=title, metadata={})  # noqa: E731
        self._command(["add", text, "--title", title], call, interrupt, done)

    @rule(changes=_changes, interrupt=_INTERRUPTION)
    def add_src(self, changes: list[tuple[bool, str]], interrupt: Any) -> None:
        self._change_files(changes)
        done = self._folder_model()
        # add-src keeps the documents of files that left the folder (sync deletes them)
        prefix = self.folder.as_uri() + "/"
        done.update({k: v for k, v in self.model.items() if k.startswith(prefix) and k not in done})
        call = lambda ws: api.add_sources(ws, self.location, [str(self.folder)], title=None, metadata={})  # noqa: E731
        self._command(
            ["add-src", str(self.folder)], call, interrupt, done, self.sources | {self._folder_source()}
        )

    @precondition(lambda self: self.sources)
    @rule(changes=_changes, interrupt=_INTERRUPTION)
    def sync(self, changes: list[tuple[bool, str]], interrupt: Any) -> None:
        self._change_files(changes)
        call = lambda ws: api.sync(ws, [self.location])  # noqa: E731
        self._command(["sync"], call, interrupt, self._folder_model())

    @precondition(lambda self: self.sources)
    @rule(keep=st.booleans(), interrupt=_INTERRUPTION)
    def forget_src(self, keep: bool, interrupt: Any) -> None:
        source = self._folder_source()
        # Its documents are the ones it claims: a document kept by an earlier `--keep-documents` whose
        # file left the folder before the source was added again is no longer the source's.
        claimed = set() if keep else self._claimed_by(source)
        assert all(k.startswith(self.folder.as_uri() + "/") for k in claimed), claimed
        done = {k: v for k, v in self.model.items() if k not in claimed}
        call = lambda ws: api.forget_source(ws, self.location, source, keep_documents=keep)  # noqa: E731
        args = ["forget-src", source, *(["--keep-documents"] if keep else [])]
        self._command(args, call, interrupt, done, self.sources - {source})

    @precondition(lambda self: self.model)
    @rule(data=st.data(), interrupt=_INTERRUPTION)
    def delete(self, data: st.DataObject, interrupt: Any) -> None:
        key = data.draw(st.sampled_from(sorted(self.model)))
        doc = next(d for d in self._documents() if (d.uri or d.title) == key)
        done = {k: v for k, v in self.model.items() if k != key}
        call = lambda ws: api.delete_document(ws, self.location, doc.id)  # noqa: E731
        self._command(["delete", doc.id], call, interrupt, done)

    @precondition(lambda self: self.model)
    @rule(interrupt=_INTERRUPTION)
    def rebuild(self, interrupt: Any) -> None:
        self._command(["rebuild"], lambda ws: api.rebuild(ws, self.location), interrupt, dict(self.model))

    @precondition(lambda self: self.model)
    @rule()
    def vacuum(self) -> None:
        self._command(["vacuum"], lambda ws: api.vacuum(ws, self.location), None, dict(self.model))

    @precondition(lambda self: self.model)
    @rule()
    def tag_create(self) -> None:
        name = f"t{next(self.names)}"
        self.counts["tag create"] += 1
        finished, _ = self._run(lambda ws: api.create_tag(ws, self.location, name), None)
        assert finished
        self.tags[name] = (dict(self.model), set(self.sources))

    @precondition(lambda self: self.tags)
    @rule(data=st.data(), interrupt=_INTERRUPTION)
    def tag_restore(self, data: st.DataObject, interrupt: Any) -> None:
        name = data.draw(st.sampled_from(sorted(self.tags)))
        done, sources = self.tags[name]
        call = lambda ws: api.restore_tag(ws, self.location, name)  # noqa: E731
        self._command(["tag", "restore", name, "--yes"], call, interrupt, dict(done), set(sources))

    # -- invariants ----------------------------------------------------------------------------------

    @invariant()
    def holds_what_was_acknowledged(self) -> None:
        assert self._stored() == self.model
        assert self._stored_sources() == self.sources

    @invariant()
    def every_chunk_has_its_document_and_every_document_chunks(self) -> None:
        db = self._reader()
        if db is None:
            return
        documents = set(wait(reads.rows_where(db, db.documents, None, ["id"])).column("id").to_pylist())
        owners = set(
            wait(reads.rows_where(db, db.chunks, None, ["document_id"])).column("document_id").to_pylist()
        )
        assert owners == documents

    @invariant()
    def the_next_writer_leaves_no_journal(self) -> None:
        if not self.exists():
            return
        before = self._stored()
        db = open_database(self.location, writable=True)
        with exclusive(db):
            assert PENDING_WRITE not in db.meta
        assert self._stored() == before


class S3WriteMatrix(WriteMatrix):
    """The matrix against an `s3://` database on an S3-compatible server (`endpoint`): no disk to fill;
    a killed writer's lease lapses after a few seconds, so that the next writer takes over quickly."""

    endpoint: ClassVar[str] = ""
    interruptions: ClassVar[st.SearchStrategy] = interruptions_of(["ctrl-c", "fault", "kill", "sigint"])

    def __init__(self) -> None:
        super().__init__()
        options = self.location.storage_options
        config = self.root / "config.toml"
        table = ", ".join(f'{k} = "{v}"' for k, v in options.items())
        config.write_text(f'[databases.m]\nuri = "{self.location.uri}"\nstorage_options = {{ {table} }}\n')
        self.env.update(HAIKU_CONFIG=str(config), HAIKU_LEASE_SECONDS="5")

    def make_location(self) -> Location:
        options = {"endpoint": self.endpoint, "allow_http": "true", "region": "us-east-1"}
        return Location(name="m", uri=f"s3://lab/{self.root.name}.lancedb", storage_options=options)

    def target(self) -> list[str]:
        return ["-d", "m"]

    def exists(self) -> bool:
        try:
            open_database(self.location)
        except HaikuError:
            return False
        return True
