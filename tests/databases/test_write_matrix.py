"""The crash-and-interrupt matrix: random short sequences of write commands against a real database, each
perhaps interrupted (Ctrl-C, a failure, or `kill -9` of a real `haiku` process) at a checkpoint the code
declares; after each step the database holds exactly what was acknowledged (and what a Ctrl-C said it
kept), every chunk has its document and every document its chunks, and the next writer leaves no journal.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from haiku_cli import api
from haiku_cli.errors import DatabaseError, HaikuError
from haiku_cli.store import open_database, reads
from haiku_cli.store.blocking import wait
from haiku_cli.store.handle import PENDING_WRITE
from haiku_cli.store.location import Location
from haiku_cli.store.writer_lock import exclusive

pytestmark = pytest.mark.slow

# Every checkpoint a write passes (store.writer_lock.checkpoint), by the modules that declare them.
_CHECKPOINTS = ["journal-written", "data-written", "before-commit", "tag-restored", "rebuild-batch"]
_MODULES = ["transaction", "document_writes", "tags", "new_chunks_table"]
_AFTER_COMMIT = {"tag-restored"}
_WORDS = ["heron", "plover", "egret", "kestrel", "osprey", "curlew"]

# (how, checkpoint) or None: run whole. `kill` runs the command as a real process, killed there.
_interruptions = st.none() | st.tuples(
    st.sampled_from(["ctrl-c", "fault", "kill"]), st.sampled_from(_CHECKPOINTS)
)

_changes = st.lists(st.tuples(st.booleans(), st.sampled_from(_WORDS)), max_size=3)

Model = dict[str, str]  # the document's uri (or title) -> its content hash


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


def _hash(doc) -> str:
    from haiku_cli.ingest.stored import content_hash, stored_content

    return content_hash(stored_content(doc), [p.data for p in doc.pictures])


class WriteMatrix(RuleBasedStateMachine):
    embedder = None

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="matrix-"))
        self.folder = self.root / "src"
        self.folder.mkdir()
        self.location = Location(name="m", uri=str(self.root / "m.lancedb"))
        self.ws = api.Workspace.load(embedder=self.embedder)
        self.model: Model = {}
        self.tags: dict[str, tuple[Model, bool]] = {}
        self.added_src = False
        self.names = itertools.count()

    def teardown(self) -> None:
        self.ws.pool.forget(self.location)
        shutil.rmtree(self.root, ignore_errors=True)

    # -- running a command -------------------------------------------------------------------------

    def _run(self, call, interrupt) -> tuple[bool, list[api.WriteOutcome]]:
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

    def _killed(self, args: list[str], point: str, done: Model) -> None:
        """Run `haiku ARGS --db ...` as a process of its own, killed with SIGKILL at `point` (the model
        becomes `done` if it got past its commit, or ended before reaching `point`)."""
        gate = self.root / f"gate-{next(self.names)}"
        gate.mkdir()
        env = {**os.environ, "HAIKU_TEST_PAUSE": f"{point}:{gate}"}
        command = [sys.executable, "-m", "haiku_cli", *args, "--db", self.location.uri]
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while not any(gate.glob(f"{point}.*.reached")) and proc.poll() is None:
                time.sleep(0.02)
        finally:
            proc.kill()
            proc.wait()
        self.ws.pool.forget(self.location)  # its handle may name tables the killed write made
        print(
            "KILLED", args[:2], point, any(gate.glob(f"{point}.*.reached")), proc.returncode, file=sys.stderr
        )
        reached = any(gate.glob(f"{point}.*.reached"))
        if (reached and point in _AFTER_COMMIT) or (not reached and proc.returncode == 0):
            self.model = done

    def _stored(self) -> Model:
        if not (self.root / "m.lancedb").exists():
            return {}
        db = open_database(self.location)  # a reader: with a journal pending, the state before it
        return {d.uri or d.title or "": d.content_hash for d in wait(reads.list_documents(db, limit=None))}

    def _ran(self, call, interrupt, done: Model) -> None:
        self._after(*self._run(call, interrupt), done)

    def _after(self, finished: bool, ended: list[api.WriteOutcome], done: Model) -> None:
        """The model after a command: `done` if it finished or committed; else what Ctrl-C said it kept."""
        if finished or any(o.stored for o in ended):
            self.model = done
            return
        kept = ended[-1].documents if ended else 0
        stored = self._stored()
        new = {k: v for k, v in stored.items() if self.model.get(k) != v}
        assert len(new) == kept, (new, ended)  # what the line would claim is what is stored
        assert all(done.get(k) == v or v in done.values() for k, v in new.items())  # each whole, current
        self.model = stored

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
        files = {p.as_uri(): _hash_of_file(p) for p in sorted(self.folder.iterdir())}
        others = {k: v for k, v in self.model.items() if not k.startswith(self.folder.as_uri() + "/")}
        return {**others, **files}

    @rule(word=st.sampled_from(_WORDS), interrupt=_interruptions)
    def add_text(self, word: str, interrupt) -> None:
        title = f"{word} {next(self.names)}"
        text = f"A {word} seen over the mudflats ({title})."
        done = {**self.model, title: _hash_of_text(text, title)}
        if interrupt is not None and interrupt[0] == "kill":
            self._killed(["add", text, "--title", title], interrupt[1], done)
            return
        self._after(
            *self._run(lambda ws: api.add_text(ws, self.location, text, title=title, metadata={}), interrupt),
            done,
        )

    @rule(changes=_changes, interrupt=_interruptions)
    def add_src(self, changes, interrupt) -> None:
        self._change_files(changes)
        done = self._folder_model()
        # add-src keeps the documents of files that left the folder (sync deletes them)
        prefix = self.folder.as_uri() + "/"
        done.update({k: v for k, v in self.model.items() if k.startswith(prefix) and k not in done})
        if interrupt is not None and interrupt[0] == "kill":
            self._killed(["add-src", str(self.folder)], interrupt[1], done)
            self.added_src = self.added_src or self.model == done
            return
        call = lambda ws: api.add_sources(ws, self.location, [str(self.folder)], title=None, metadata={})  # noqa: E731
        finished, ended = self._run(call, interrupt)
        self.added_src = self.added_src or finished or any(o.stored for o in ended)
        self._after(finished, ended, done)

    @precondition(lambda self: self.added_src)
    @rule(changes=_changes, interrupt=_interruptions)
    def sync(self, changes, interrupt) -> None:
        self._change_files(changes)
        done = self._folder_model()
        if interrupt is not None and interrupt[0] == "kill":
            self._killed(["sync"], interrupt[1], done)
            return
        self._ran(lambda ws: api.sync(ws, [self.location]), interrupt, done)

    @precondition(lambda self: self.model)
    @rule(data=st.data(), interrupt=_interruptions)
    def delete(self, data, interrupt) -> None:
        key = data.draw(st.sampled_from(sorted(self.model)))
        db = open_database(self.location)
        doc = next(d for d in wait(reads.list_documents(db, limit=None)) if (d.uri or d.title) == key)
        done = {k: v for k, v in self.model.items() if k != key}
        if interrupt is not None and interrupt[0] == "kill":
            self._killed(["delete", doc.id], interrupt[1], done)
            return
        self._ran(lambda ws: api.delete_document(ws, self.location, doc.id), interrupt, done)

    @precondition(lambda self: self.model)
    @rule(interrupt=_interruptions)
    def rebuild(self, interrupt) -> None:
        if interrupt is not None and interrupt[0] == "kill":
            self._killed(["rebuild"], interrupt[1], dict(self.model))
            return
        self._ran(lambda ws: api.rebuild(ws, self.location), interrupt, dict(self.model))

    @precondition(lambda self: self.model)
    @rule()
    def vacuum(self) -> None:
        self._ran(lambda ws: api.vacuum(ws, self.location), None, dict(self.model))

    @precondition(lambda self: self.model)
    @rule()
    def tag_create(self) -> None:
        name = f"t{next(self.names)}"
        finished, _ = self._run(lambda ws: api.create_tag(ws, self.location, name), None)
        assert finished
        self.tags[name] = (dict(self.model), self.added_src)

    @precondition(lambda self: self.tags)
    @rule(data=st.data(), interrupt=_interruptions)
    def tag_restore(self, data, interrupt) -> None:
        name = data.draw(st.sampled_from(sorted(self.tags)))
        done, added_src = self.tags[name]
        before = self.model
        if interrupt is not None and interrupt[0] == "kill":
            self._killed(["tag", "restore", name, "--yes"], interrupt[1], dict(done))
        else:
            self._after(
                *self._run(lambda ws: api.restore_tag(ws, self.location, name), interrupt), dict(done)
            )
        if self.model is not before:  # restored: the sources remembered are the tag's too
            self.added_src = added_src

    # -- invariants ----------------------------------------------------------------------------------

    @invariant()
    def holds_what_was_acknowledged(self) -> None:
        assert self._stored() == self.model

    @invariant()
    def every_chunk_has_its_document_and_every_document_chunks(self) -> None:
        if not (self.root / "m.lancedb").exists():
            return
        db = open_database(self.location)
        documents = set(wait(reads.rows_where(db, db.documents, None, ["id"])).column("id").to_pylist())
        owners = set(
            wait(reads.rows_where(db, db.chunks, None, ["document_id"])).column("document_id").to_pylist()
        )
        assert owners == documents

    @invariant()
    def the_next_writer_leaves_no_journal(self) -> None:
        if not (self.root / "m.lancedb").exists():
            return
        before = self._stored()
        db = open_database(self.location, writable=True)
        with exclusive(db):
            assert PENDING_WRITE not in db.meta
        assert self._stored() == before


def test_random_writes_interrupted_at_every_checkpoint_keep_the_database_whole(embedder) -> None:
    from hypothesis.stateful import run_state_machine_as_test

    WriteMatrix.embedder = embedder
    run_state_machine_as_test(
        WriteMatrix,
        settings=settings(
            max_examples=10,
            stateful_step_count=8,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        ),
    )
