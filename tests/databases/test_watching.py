"""`watch` on the real file system with real watchfiles events, against a real database."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from haiku_cli.databases import operations
from haiku_cli.databases.watching import WatchEvent, watch
from haiku_cli.errors import ExitCode
from haiku_cli.store import open_database, reads
from haiku_cli.store.blocking import wait
from haiku_cli.store.location import Location
from tests.support.children import ctrl_c_preexec, reaped
from tests.support.etag_server import serve_page

# How long a test waits for a change to show; a bound on a hang, not a performance target.
_PATIENCE = 30.0


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "apples.md").write_text("# Apples\n\nApples grow in orchards.\n")
    return folder


class Watching:
    """A watch running in a thread of its own, with the events it reported."""

    def __init__(self, ws, location: Location, **options) -> None:
        self.events: list[WatchEvent] = []
        self.notes: list[str] = []
        self._started = threading.Event()
        self._stop: Callable[[], None] | None = None
        self.thread = threading.Thread(target=anyio.run, args=(self._run, ws, location, options), daemon=True)

    async def _run(self, ws, location: Location, options: dict) -> None:
        with anyio.CancelScope() as scope:
            token = anyio.lowlevel.current_token()
            self._stop = lambda: anyio.from_thread.run_sync(scope.cancel, token=token)
            await watch(
                ws,
                [location],
                on_change=self.events.append,
                on_note=self.notes.append,
                started=self._started.set,
                **options,
            )

    def __enter__(self) -> Watching:
        self.thread.start()
        assert self._started.wait(_PATIENCE), "the watch did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._stop()
        self.thread.join(_PATIENCE)

    def wait_for(self, check: Callable[[list[WatchEvent]], bool]) -> list[WatchEvent]:
        deadline = time.monotonic() + _PATIENCE
        while time.monotonic() < deadline:
            if check(list(self.events)):
                return list(self.events)
            time.sleep(0.05)
        raise AssertionError(f"not seen in time; events: {self.events}")


def _seen(status: str, path: Path | str) -> Callable[[list[WatchEvent]], bool]:
    return lambda events: any(e.status == status and e.path == str(path) for e in events)


def _added(ws, location: Location, source: Path | str) -> None:
    anyio.run(lambda: operations.add_sources(ws, location, [str(source)], title=None, metadata={}))


def _documents(location: Location) -> dict[str, str]:
    db = open_database(location)
    return {d.uri: d.id for d in wait(reads.list_documents(db, limit=None))}


def test_saves_renames_and_moves_are_followed_without_duplicates(
    workspace, tmp_path: Path, notes: Path
) -> None:
    ws, location = workspace(), Location("w", str(tmp_path / "w.lancedb"))
    _added(ws, location, notes)
    with Watching(ws, location, debounce_ms=100) as watching:
        (notes / "kiwis.md").write_text("Kiwis are fuzzy.\n")
        watching.wait_for(_seen("added", notes / "kiwis.md"))
        first = _documents(location)[(notes / "kiwis.md").as_uri()]

        # An editor's save: write a temporary file, then rename it over the original.
        (notes / ".kiwis.md.swp").write_text("swap")
        (notes / "kiwis.md.tmp").write_text("Kiwis are fuzzy and green inside.\n")
        os.replace(notes / "kiwis.md.tmp", notes / "kiwis.md")
        (notes / ".kiwis.md.swp").unlink()
        watching.wait_for(_seen("updated", notes / "kiwis.md"))
        assert _documents(location)[(notes / "kiwis.md").as_uri()] == first

        apples = _documents(location)[(notes / "apples.md").as_uri()]
        (notes / "sub").mkdir()
        os.rename(notes / "apples.md", notes / "sub" / "apples.md")
        watching.wait_for(_seen("updated", notes / "sub" / "apples.md"))  # moved: the same document
        assert _documents(location)[(notes / "sub" / "apples.md").as_uri()] == apples
    assert sorted(_documents(location)) == sorted(
        [(notes / "kiwis.md").as_uri(), (notes / "sub" / "apples.md").as_uri()]
    )
    assert not [e for e in watching.events if e.path.endswith((".tmp", ".swp"))]


def test_quiet_while_nothing_changes_and_catches_up_after_a_stop(
    workspace, tmp_path: Path, notes: Path
) -> None:
    ws, location = workspace(), Location("w", str(tmp_path / "w.lancedb"))
    _added(ws, location, notes)
    with Watching(ws, location, debounce_ms=100, sweep_seconds=0.5) as watching:
        time.sleep(1.3)  # two sweeps over an unchanged folder
    assert watching.events == [] and watching.notes == []
    (notes / "apples.md").unlink()
    (notes / "pears.md").write_text("Pears ripen off the tree.\n")
    with Watching(ws, location) as watching:  # the first sweep finds what changed while stopped
        assert {(e.status, Path(e.path).name) for e in watching.events} == {
            ("deleted", "apples.md"),
            ("added", "pears.md"),
        }


def test_a_database_without_sources_says_so_and_picks_them_up_at_the_next_sweep(
    workspace, tmp_path: Path, notes: Path
) -> None:
    ws, location = workspace(), Location("w", str(tmp_path / "w.lancedb"))
    anyio.run(lambda: operations.add_text(ws, location, "A typed note.", title=None, metadata={}))
    with Watching(ws, location, sweep_seconds=1, debounce_ms=100) as watching:
        (note,) = watching.notes
        assert note == (
            "database 'w' remembers no sources yet; "
            "those add-src adds are watched from the next sweep (every 1 s)"
        )
        _added(workspace(), location, notes)  # by another writer, while watching
        time.sleep(2.5)  # a sweep reads the sources again and watches the folder
        (notes / "pears.md").write_text("Pears ripen off the tree.\n")
        watching.wait_for(_seen("added", notes / "pears.md"))


async def _no_watching(roots, recursive, stop, debounce_ms) -> AsyncIterator[set]:
    raise OSError(errno.ENOSPC, "OS file watch limit reached")
    yield set()  # pragma: no cover - makes this an async generator


def test_when_the_system_cannot_watch_it_says_so_once_and_sweeps(
    workspace, tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haiku_cli.databases import watching as watching_module

    monkeypatch.setattr(watching_module, "_UNWATCHED_SWEEP_SECONDS", 0.5)
    ws, location = workspace(), Location("w", str(tmp_path / "w.lancedb"))
    _added(ws, location, notes)
    # Sweeps every 1000 s while events come; without events, every (here) 0.5 s.
    with Watching(ws, location, watcher=_no_watching, sweep_seconds=1000) as watching:
        (notes / "pears.md").write_text("Pears ripen off the tree.\n")
        watching.wait_for(_seen("added", notes / "pears.md"))
        (notes / "plums.md").write_text("Plums are stone fruit.\n")
        watching.wait_for(_seen("added", notes / "plums.md"))
    assert len(watching.notes) == 1
    assert "cannot watch for changes (OS file watch limit reached); sweeping every" in watching.notes[0]


async def _until_stopped(roots, recursive, stop, debounce_ms) -> AsyncIterator[set]:
    # As watchfiles' watcher: a thread that returns once `stop` is set (here with no timeout at all).
    def wait() -> None:
        while not stop.is_set():
            time.sleep(0.01)

    await anyio.to_thread.run_sync(wait)
    return
    yield set()  # pragma: no cover - makes this an async generator


def test_a_stopped_watch_ends_without_waiting_for_its_watchers_thread(
    workspace, tmp_path: Path, notes: Path
) -> None:
    ws, location = workspace(), Location("w", str(tmp_path / "w.lancedb"))
    _added(ws, location, notes)
    with Watching(ws, location, watcher=_until_stopped) as watching:
        pass
    assert not watching.thread.is_alive()  # the stop reached the watcher's thread (it used to wait 5 s)


def test_other_writers_meanwhile_lose_nothing(workspace, tmp_path: Path, notes: Path) -> None:
    ws, location = workspace(), Location("w", str(tmp_path / "w.lancedb"))
    _added(ws, location, notes)
    other = workspace()
    with Watching(ws, location, debounce_ms=100) as watching:
        for i in range(3):
            (notes / f"n{i}.md").write_text(f"Note number {i} about tides.\n")
            typed = anyio.run(
                lambda i=i: operations.add_text(other, location, f"Typed note {i}.", title=None, metadata={})
            )
            assert typed.outcomes[0].status == "added"
        watching.wait_for(lambda events: sum(e.status == "added" for e in events) == 3)
        apples = _documents(location)[(notes / "apples.md").as_uri()]
        anyio.run(lambda: operations.delete_document(other, location, apples))
        anyio.run(lambda: operations.sync(other, [location]))  # a second syncer at the same time
    files = {uri for uri in _documents(location) if uri is not None}
    assert files == {(notes / name).as_uri() for name in ("apples.md", "n0.md", "n1.md", "n2.md")}
    # The typed notes stay; apples.md, deleted by hand while its file is still there, was read again.
    assert wait(reads.count_documents(open_database(location))) == 4 + 3


def test_a_writer_holding_the_lock_too_long_is_said_once_and_the_change_follows(
    workspace, write_config, tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haiku_cli.databases import watching as watching_module
    from haiku_cli.store.writer_lock import WaitPolicy, acquire

    monkeypatch.setattr(watching_module, "_RETRY_SECONDS", 0.5)  # retries come often: none is said again
    write_config("[storage]\nwrite_wait_seconds = 0.2\n")
    ws, location = workspace(), Location("w", str(tmp_path / "w.lancedb"))
    _added(ws, location, notes)
    with Watching(ws, location, debounce_ms=100) as watching:
        held = acquire(Path(location.uri), location.name, WaitPolicy(0))  # another writer, for a while
        try:
            (notes / "pears.md").write_text("Pears ripen off the tree.\n")
            watching.wait_for(lambda events: any(e.status == "failed" for e in events))
            time.sleep(2)  # a few retries meet the same writer: not said again
        finally:
            held.release()
        watching.wait_for(_seen("added", notes / "pears.md"))
    failures = [e for e in watching.events if e.status == "failed"]
    assert len(failures) == 1 and "is being written by" in (failures[0].error or "")


def test_url_sources_are_polled(workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    ws, location = workspace(), Location("w", str(tmp_path / "w.lancedb"))
    with serve_page(b"<title>Tides</title><p>High tide at noon.</p>", "/tides.html") as page:
        _added(ws, location, page.url)
        with Watching(ws, location, poll_seconds=0.5) as watching:
            page.body = b"<title>Tides</title><p>High tide at one.</p>"
            watching.wait_for(
                lambda events: any(e.status == "updated" and e.path == page.url for e in events)
            )
        assert 304 in page.statuses  # unchanged polls were answered "not modified"
    (doc_id,) = _documents(location).values()
    assert "one" in wait(reads.get_document(open_database(location), doc_id)).content


@pytest.mark.slow
def test_killed_with_sigkill_and_restarted_it_catches_up(tmp_path: Path, notes: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    db = tmp_path / "k.lancedb"
    haiku = [sys.executable, "-m", "haiku_cli"]
    assert (
        subprocess.run([*haiku, "add-src", str(notes), "--db", str(db)], env=env, timeout=120).returncode == 0
    )

    def start(*options: str) -> subprocess.Popen:
        return subprocess.Popen(
            [*haiku, "watch", "--db", str(db), "--debounce", "100", *options],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=ctrl_c_preexec(),  # stopped by Ctrl-C below, as a person stops it
        )

    first = start()  # as a person runs it: one line per change on stderr
    with reaped(first):
        said: list[str] = []
        threading.Thread(target=lambda: said.extend(iter(first.stderr.readline, "")), daemon=True).start()
        (notes / "n0.md").write_text("Note 0 on the tides of the estuary.\n")
        deadline = time.monotonic() + 120
        while not any(line.startswith(f"added     {notes / 'n0.md'} → ") for line in said):
            assert time.monotonic() < deadline, f"no line for n0.md; said: {said}"
            time.sleep(0.1)
        for i in range(1, 20):
            (notes / f"n{i}.md").write_text(f"Note {i} on the tides of the estuary.\n")
        time.sleep(1.0)  # whether the kill lands before, during or after their sync, the restart catches up
        first.send_signal(signal.SIGKILL)  # perhaps in the middle of writing them
        first.wait(30)
    (notes / "apples.md").unlink()
    second = start("--json")  # its first sweep catches up: the notes not yet written, apples.md gone
    printed: list[dict] = []
    threading.Thread(
        target=lambda: printed.extend(json.loads(line) for line in iter(second.stdout.readline, "")),
        daemon=True,
    ).start()
    with reaped(second):
        deadline = time.monotonic() + 120
        while not any(line["status"] == "deleted" for line in printed):
            assert time.monotonic() < deadline, f"apples.md not deleted; printed: {printed}"
            time.sleep(0.2)
        found = subprocess.run(
            [*haiku, "list", "--db", str(db), "--json", "--limit", "100"],
            env=env,
            capture_output=True,
            text=True,
        )
        second.send_signal(signal.SIGINT)
        assert second.wait(60) == ExitCode.INTERRUPTED  # Ctrl-C stops it
    assert [line["path"] for line in printed if line["status"] == "deleted"] == [str(notes / "apples.md")]
    uris = {d["uri"] for d in json.loads(found.stdout)["documents"]}
    assert uris == {(notes / f"n{i}.md").as_uri() for i in range(20)}


def _syncs(ws, location: Location) -> int:
    """How many syncs wrote the database, as `haiku history` lists them."""
    history = anyio.run(lambda: operations.history(ws, location))
    return sum(w.operation.startswith("sync ") for w in history.writes)


def test_a_burst_of_saves_is_one_sync(workspace, tmp_path: Path, notes: Path) -> None:
    ws, location = workspace(), Location("w", str(tmp_path / "w.lancedb"))
    _added(ws, location, notes)
    names = [f"n{i:02}.md" for i in range(20)]
    with Watching(ws, location, debounce_ms=500) as watching:
        for name in names:  # as a `git checkout` or an unzip writes them, a few milliseconds apart
            (notes / name).write_text(f"Note {name} on the tides of the estuary.\n")
            time.sleep(0.01)  # 50 times within the quiet spell (500 ms) that ends a burst
        watching.wait_for(
            lambda events: {Path(e.path).name for e in events if e.status == "added"} >= set(names)
        )
    assert _syncs(workspace(), location) == 1


def test_a_database_inside_the_watched_folder_does_not_set_off_syncs_of_its_own(
    workspace, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its own writes change files under the watched folder: those are not changes of the source, and
    # syncing them (however little each finds) would keep a watch busy after every write it makes.
    from haiku_cli.databases import watching as watching_module

    synced: list[Path] = []
    real_sync = operations.sync_source

    async def sync_source(ws, db, source, *, scope=None):
        synced.extend(scope or [])
        return await real_sync(ws, db, source, scope=scope)

    monkeypatch.setattr(watching_module.operations, "sync_source", sync_source)
    ws, location = workspace(), Location("w", str(notes / "w.lancedb"))
    _added(ws, location, notes)
    with Watching(ws, location, debounce_ms=100) as watching:
        (notes / "kiwis.md").write_text("Kiwis are fuzzy.\n")
        watching.wait_for(_seen("added", notes / "kiwis.md"))
        (notes / "pears.md").write_text("Pears ripen off the tree.\n")
        watching.wait_for(_seen("added", notes / "pears.md"))
    assert {p.name for p in synced} == {"kiwis.md", "pears.md"}  # never a file of the database
    assert _syncs(workspace(), location) == 2  # one write for each saved note
    assert sorted(Path(e.path).name for e in watching.events) == ["kiwis.md", "pears.md"]
