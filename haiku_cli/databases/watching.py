"""`haiku watch`: keep databases in step with their remembered sources until stopped.

File system events (watchfiles: inotify, FSEvents, ...) name the paths that changed; after a quiet spell
(the debounce) each source syncs just those paths, as one write under the writer lock, so an editor's
write-to-temp-then-rename, a rename or a move ends as one document per file. A periodic full sweep
catches what events missed (and is all there is when the system cannot watch: an exhausted inotify
limit), and URL sources are asked again on their own interval. On start every source is swept once,
so a watcher killed and restarted catches up with what changed while it was gone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
from pydantic import BaseModel

from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import HaikuError
from haiku_cli.ingest.ignore import IGNORE_FILES
from haiku_cli.ingest.kinds import kind_of
from haiku_cli.ingest.reports import SourceSync
from haiku_cli.store.database import Database
from haiku_cli.store.handle import catch_up
from haiku_cli.store.location import Location
from haiku_cli.store.source_tables import RememberedSource

# What a watch prints: a document added, replaced or deleted; an item or a whole source that failed.
EventKind = Literal["added", "updated", "deleted", "skipped", "failed"]

# The events of a path changing (set of (change, path)), as watchfiles' awatch yields them.
Watcher = Callable[[Sequence[Path], bool, anyio.Event, int], AsyncIterator[AbstractSet[tuple[object, str]]]]

# How long after a failed sync (e.g. another writer held the lock too long) its paths are tried again.
_RETRY_SECONDS = 5.0
# Without file events (the system cannot watch), sources are swept at least this often instead.
_UNWATCHED_SWEEP_SECONDS = 60.0


class WatchEvent(BaseModel):
    """One change a watch made (or could not make), as `haiku watch` prints it."""

    database: str
    source: str  # the remembered source
    path: str  # the file or URL changed; the source itself when it cannot be read as a whole
    status: EventKind
    document_id: str | None = None
    error: str | None = None
    note: str | None = None  # e.g. "moved from OLD PATH" for a renamed file that kept its document


@dataclass
class _Watched:
    """One database being watched: its open handle and remembered sources."""

    location: Location
    db: Database
    sources: list[RememberedSource] = field(default_factory=list)


async def watch(
    ws: Workspace,
    locations: Sequence[Location],
    *,
    on_change: Callable[[WatchEvent], None],
    on_note: Callable[[str], None],
    sweep_seconds: float = 300.0,
    poll_seconds: float = 600.0,
    debounce_ms: int = 500,
    watcher: Watcher | None = None,
    started: Callable[[], None] | None = None,
) -> None:
    """Watch the remembered sources of the databases until cancelled (Ctrl-C), syncing what changes.

    Each change (or failure, said once until it changes) goes to `on_change`; facts about the watch
    itself (it cannot watch, so it sweeps) go to `on_note`. `started` is called once the first sweep is
    done and events are being watched.
    """
    run = _Run(ws, on_change, on_note, watcher or _watchfiles, debounce_ms)
    for location in locations:
        db = await ws.pool.open_one(location, writable=True)
        run.watched.append(_Watched(location, db))
    await run.reload()
    for watched in run.watched:
        if not watched.sources:
            on_note(
                f"database '{watched.location.name}' remembers no sources yet; those add-src adds are "
                f"watched from the next sweep (every {sweep_seconds:g} s)"
            )
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run.follow_events)
        await run.sweep(urls=True)  # catch up with what changed while nothing watched
        if started is not None:
            started()
        tasks.start_soon(run.every, sweep_seconds, False)
        tasks.start_soon(run.every, poll_seconds, True)
        tasks.start_soon(run.apply_pending)


class _Run:
    """The state of one watch: databases, the paths waiting to be synced, and what was said already."""

    def __init__(
        self,
        ws: Workspace,
        on_change: Callable[[WatchEvent], None],
        on_note: Callable[[str], None],
        watcher: Watcher,
        debounce_ms: int,
    ) -> None:
        self.ws = ws
        self.on_change = on_change
        self.on_note = on_note
        self.watcher = watcher
        self.debounce_ms = debounce_ms
        self.watched: list[_Watched] = []
        self.lock = anyio.Lock()  # one sync at a time: events, sweeps and polls take turns
        self.pending: dict[tuple[int, str], set[Path]] = {}  # (database index, source) -> paths changed
        self.wake = anyio.Event()
        self.roots_changed = anyio.Event()
        self.unwatched = False  # the system cannot watch: sweeps stand in for events
        self.events_lost = anyio.Event()  # set when it turns out the system cannot watch
        self.said: dict[tuple[str, str, str], str] = {}  # (database, source, path) -> failure said

    async def reload(self) -> None:
        """Read each database's remembered sources again (an `add-src` may have added one meanwhile)."""
        before = self._roots()
        for watched in self.watched:
            await anyio.to_thread.run_sync(catch_up, watched.db)  # another process may have added some
            watched.sources = await anyio.to_thread.run_sync(operations.remembered_sources, watched.db)
        if self._roots() != before:
            self.roots_changed.set()

    def _roots(self) -> tuple[frozenset[Path], frozenset[Path]]:
        """The folders to watch recursively, and those watched for one file source each (not recursively)."""
        folders, parents = set(), set()
        for watched in self.watched:
            for source in watched.sources:
                path = kind_of(source.source).local_path(source.source)
                if path is None:
                    continue
                if path.is_dir():
                    folders.add(path)
                elif path.parent.is_dir():
                    parents.add(path.parent)  # a save replaces the file: its folder sees that
        return frozenset(folders), frozenset(parents)

    async def follow_events(self) -> None:
        """Turn file system events into pending paths; start again when the folders to watch change."""
        while True:
            self.roots_changed = anyio.Event()
            folders, parents = self._roots()
            async with anyio.create_task_group() as tasks:
                for roots, recursive in ((folders, True), (parents, False)):
                    if roots:
                        tasks.start_soon(self._follow, sorted(roots), recursive)
                await self.roots_changed.wait()
                tasks.cancel_scope.cancel()

    async def _follow(self, roots: list[Path], recursive: bool) -> None:
        stop = anyio.Event()
        async with anyio.create_task_group() as tasks:
            # A cancel reaches the watcher only once its thread returns, which watchfiles' does when
            # `stop` is set (else after its 5 s timeout): a sibling sets it the moment both are cancelled.
            tasks.start_soon(_set_when_cancelled, stop)
            try:
                async for changes in self.watcher(roots, recursive, stop, self.debounce_ms):
                    self._note_changes(Path(path) for _, path in changes)
            except OSError as exc:  # e.g. the inotify watch limit: the sweeps take over, said once
                if not self.unwatched:
                    self.on_note(
                        f"cannot watch for changes ({exc.strerror or exc}); sweeping every "
                        f"{_UNWATCHED_SWEEP_SECONDS:g} s instead"
                    )
                self.unwatched = True
                self.events_lost.set()
            finally:
                stop.set()
                tasks.cancel_scope.cancel()

    def _note_changes(self, paths: Iterable[Path]) -> None:
        for path in paths:
            if any(part.endswith(".lancedb") for part in path.parts):
                continue  # a database's own files (one may live inside a watched folder)
            if path.name in IGNORE_FILES:
                path = path.parent  # what the folder holds may have changed
            for index, watched in enumerate(self.watched):
                for source in watched.sources:
                    root = kind_of(source.source).local_path(source.source)
                    if root is not None and (path == root or root in path.parents):
                        self.pending.setdefault((index, source.source), set()).add(path)
        if self.pending:
            self.wake.set()

    async def apply_pending(self) -> None:
        """Sync the paths events named, source by source, whenever some are waiting.

        Paths whose sync failed (another writer held the lock too long) are tried again a little later.
        """
        failed: dict[tuple[int, str], set[Path]] = {}
        while True:
            if failed:
                with anyio.move_on_after(_RETRY_SECONDS):
                    await self.wake.wait()
                for key, paths in failed.items():
                    self.pending.setdefault(key, set()).update(paths)
                failed = {}
            else:
                await self.wake.wait()
            self.wake = anyio.Event()
            pending, self.pending = self.pending, {}
            for (index, source_key), paths in pending.items():
                watched = self.watched[index]
                source = next((s for s in watched.sources if s.source == source_key), None)
                if source is not None and not await self._sync(watched, source, sorted(paths)):
                    failed[(index, source_key)] = paths

    async def every(self, seconds: float, urls: bool) -> None:
        """Sweep every path source (`urls`: poll every URL source) on an interval; once events are lost
        (the system cannot watch), sweep at once and then at least every `_UNWATCHED_SWEEP_SECONDS`."""
        while True:
            if urls:
                await anyio.sleep(seconds)
            elif self.unwatched:
                await anyio.sleep(min(seconds, _UNWATCHED_SWEEP_SECONDS))
            else:
                with anyio.move_on_after(seconds):
                    await self.events_lost.wait()
            if not urls:
                await self.reload()
            await self.sweep(urls=urls)

    async def sweep(self, *, urls: bool) -> None:
        """A full sync of every path source (with `urls`, of every source), one at a time."""
        for watched in self.watched:
            for source in list(watched.sources):
                if urls or not kind_of(source.source).polled:
                    await self._sync(watched, source, None)

    async def _sync(self, watched: _Watched, source: RememberedSource, scope: Sequence[Path] | None) -> bool:
        """Sync one source (or some paths of it); report its changes. False when it failed as a whole."""
        async with self.lock:
            try:
                done = await operations.sync_source(self.ws, watched.db, source, scope=scope)
            except HaikuError as exc:  # a database or a model that failed: said once, tried again later
                self._say(watched, source, source.source, "failed", str(exc))
                return False
        self._report(watched, source, done)
        return True

    def _report(self, watched: _Watched, source: RememberedSource, done: SourceSync) -> None:
        name = watched.location.name
        if done.error is not None:
            self._say(watched, source, source.source, "failed", done.error)
        else:
            self.said.pop((name, source.source, source.source), None)
        for change in done.changes:
            if change.status in ("failed", "skipped"):
                self._say(watched, source, change.source, change.status, change.error or change.note)
                continue
            self.said.pop((name, source.source, change.source), None)
            self.on_change(
                WatchEvent(
                    database=name,
                    source=source.source,
                    path=change.source,
                    status=change.status,  # type: ignore[arg-type]
                    document_id=change.document_id,
                    note=change.note,
                )
            )

    def _say(
        self, watched: _Watched, source: RememberedSource, path: str, status: EventKind, error: str | None
    ) -> None:
        """Report a failure once: a sweep that meets it again stays quiet until it changes."""
        key = (watched.location.name, source.source, path)
        if self.said.get(key) == error:
            return
        self.said[key] = error or ""
        self.on_change(
            WatchEvent(
                database=watched.location.name, source=source.source, path=path, status=status, error=error
            )
        )


async def _set_when_cancelled(event: anyio.Event) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        event.set()


async def _watchfiles(
    roots: Sequence[Path], recursive: bool, stop: anyio.Event, debounce_ms: int
) -> AsyncIterator[AbstractSet[tuple[object, str]]]:
    from watchfiles import awatch

    # `step`: how often the batch is checked for quiet; the debounce caps how long a burst may last.
    async for changes in awatch(
        *roots,
        stop_event=stop,
        debounce=max(debounce_ms * 4, 1600),
        step=debounce_ms,
        recursive=recursive,
        ignore_permission_denied=True,
    ):
        yield changes
