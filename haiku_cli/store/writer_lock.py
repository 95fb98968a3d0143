"""One writer at a time per database, with an owner record naming who holds it.

Local databases use an advisory `flock` on a lock file inside the database directory: the kernel drops
it when the holder dies, so a held lock always means a live writer, and a free lock with a journal
left behind means the writer that wrote the journal is dead. Object stores have no locks; there a
lease row in the meta table is taken by a conditional update and kept alive by a heartbeat, and a
lease whose heartbeat is older than its time-to-live counts as abandoned, as does at once one whose
holder ran on this machine and is gone (see docs/reliability.md). Either way, writers that had
to wait are served in the order they came (store/writer_line.py).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from haiku_cli.errors import DatabaseError, HaikuError
from haiku_cli.store.abandoned import give_up_at_exit
from haiku_cli.store.deadline import within_requests
from haiku_cli.store.failures import storage_failure, unanswered_failure
from haiku_cli.store.handle import (
    PENDING_WRITE,
    PUBLISHED,
    Database,
    catch_up,
    note_stall,
)
from haiku_cli.store.wait_policy import DEFAULT_WAIT_SECONDS as DEFAULT_WAIT_SECONDS
from haiku_cli.store.wait_policy import WaitPolicy as WaitPolicy
from haiku_cli.store.writer_line import Place, shelf_of, someone_before
from haiku_cli.store.writer_owner import Owner as Owner

T = TypeVar("T")

LOCK_FILE = "haiku-writer.lock"
LEASE_KEY = "writer_lease"
# A writer whose object-store lease went unrenewed this long is presumed dead and may be taken over. The
# holder renews it every sixth of this (a failed renewal is retried within a second) and stops writing
# once its last renewal is half of this old: a commit it started before then has the other half to land
# before anyone may take over (see docs/reliability.md for the measured renewal gaps).
LEASE_TTL_SECONDS = 60.0
_RENEW_FRACTION = 1 / 6
_HOLD_FRACTION = 1 / 2
_RETRY_RENEWAL_SECONDS = 1.0
_POLL_SECONDS = 0.2
# Each of the reads taking a lease makes (the versions listed, with the manifest when another writer
# moved them; the lease row's data file, its footer then its rows) is two requests when the store
# answers (deadline.within_requests).
_LEASE_READ_REQUESTS = 2


class _Lock:
    """A held writer lock; `release` gives it up."""

    def valid(self) -> bool:
        """Whether this writer still holds the lock (a lapsed lease may have been taken over)."""
        return True

    def release(self) -> None:
        raise NotImplementedError

    def abandon(self) -> None:
        """The database is about to be removed: write nothing more to it (a lease lives in its meta)."""


class _FileLock(_Lock):
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def release(self) -> None:
        import fcntl

        os.ftruncate(self.fd, 0)
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _try_file_lock(path: Path, owner: Owner, name: str) -> _Lock | Owner | None:
    """Take the lock file, or return the owner holding it (None if the holder left no record yet).

    A writer that removes a database it created unlinks the lock file (and the folder) while holding
    it, so a lock is only taken on the file still at the path; one got on a removed file is retried.
    """
    import fcntl

    for attempt in range(100):
        made_folder = not path.is_dir()
        try:
            path.mkdir(parents=True, exist_ok=True)
            fd, made_file = _open_lock_file(path / LOCK_FILE)
        except FileNotFoundError as exc:
            if attempt < 99:
                continue  # the folder was removed between the two calls: make it again
            raise storage_failure(name, "cannot be written", exc) from exc
        except OSError as exc:
            raise storage_failure(name, "cannot be written", exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held = Owner.parse(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
            os.close(fd)
            return held
        if _is_current(fd, path / LOCK_FILE):
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(asdict(owner)).encode(), 0)
            except OSError as exc:  # a full disk has no room even for the owner record
                _give_up_lock(fd, path, made_file=made_file, made_folder=made_folder)
                raise storage_failure(name, "cannot be written", exc) from exc
            return _FileLock(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    return None  # the file kept being removed under us: an unknown holder, tried again after a pause


def _open_lock_file(lock: Path) -> tuple[int, bool]:
    """The lock file's descriptor, and whether this call created it."""
    try:
        return os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644), True
    except FileExistsError:
        return os.open(lock, os.O_RDWR), False


def _give_up_lock(fd: int, path: Path, *, made_file: bool, made_folder: bool) -> None:
    """Release a lock taken in vain, leaving no lock file or folder behind that this attempt made."""
    import fcntl

    if made_file:
        remove_held_lock_file(path, folder=made_folder)
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def remove_held_lock_file(path: Path, *, folder: bool) -> None:
    """Unlink the lock file of the database folder `path` while still holding it, and the folder too
    when `folder` (if it is empty): the end of a database that was never (or is no longer) written."""
    # Unlinked while still held: a writer that took the lock on this file sees it gone and takes a new one.
    with suppress(OSError):
        (path / LOCK_FILE).unlink()
    if folder:
        with suppress(OSError):  # not empty: another writer is making its lock file there
            os.rmdir(path)


def _is_current(fd: int, path: Path) -> bool:
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (here.st_dev, here.st_ino)


class _Row(NamedTuple):
    """A lease row: its holder (None: unreadable), and its value as stored, by which a conditional update
    names it (a lease of an older release is stored without the fields this one adds when it writes)."""

    owner: Owner | None
    text: str


def _text(owner: Owner) -> str:
    """A lease's value as this release stores it."""
    return json.dumps(asdict(owner))


class _Lease(_Lock):
    """An object-store lease, renewed by a background heartbeat until released; `took_over`: the holder
    whose lapsed lease (or gone process's) this one replaced."""

    def __init__(self, db: Database, owner: Owner, took_over: Owner | None = None) -> None:
        self.db = db
        self.owner = owner
        self.took_over = took_over
        self.lost = False
        # Each renewal's stamp and when its commit landed, and how many failed: for measuring the gaps.
        self.renewals: list[tuple[float, float]] = []
        self.failed_renewals = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{db.name}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        pause = self.owner.ttl * _RENEW_FRACTION
        while not self._stop.wait(pause):
            try:
                with self.db.meta_guard:  # never beside this process's own meta commits: they would conflict
                    renewed = Owner(**{**asdict(self.owner), "heartbeat": time.time()})
                    kept = _compare_and_set(self.db, _text(self.owner), renewed)
            except Exception:
                # A transient store error: try again soon, well before the holder must stop writing.
                self.failed_renewals += 1
                pause = min(_RETRY_RENEWAL_SECONDS, self.owner.ttl * _RENEW_FRACTION)
                continue
            if not kept:
                self.lost = True
                return
            self.owner = renewed
            self.renewals.append((renewed.heartbeat, time.time()))
            pause = self.owner.ttl * _RENEW_FRACTION

    @property
    def held_for(self) -> float:
        """How long after its last renewal this writer stops writing."""
        return self.owner.ttl * _HOLD_FRACTION

    def valid(self) -> bool:
        # Others take over only after the whole time-to-live; stopping at half of it leaves a commit
        # started just before that the other half to land.
        return not self.lost and time.time() - self.owner.heartbeat < self.held_for

    def abandon(self) -> None:
        self._stop.set()
        self._thread.join()
        self.lost = True  # nothing left to give back

    def release(self) -> None:
        self._stop.set()
        if self.db.stalled:
            # The store stopped answering during this write: giving the lease back would wait out the
            # limit again (after the heartbeat's renewal in flight), so it lapses after its time-to-live,
            # as a killed writer's does; the next writer then takes it over and undoes what is left.
            # A renewal still in flight is cancelled at exit rather than waited for.
            self.lost = True
            give_up_at_exit()
            return
        self._thread.join()
        if self.valid():
            # If the store cannot be reached to give the lease back, it lapses after its time-to-live;
            # the command's own error (if any) is the one worth reporting.
            with suppress(Exception), self.db.meta_guard:
                _compare_and_set(self.db, _text(self.owner), None)


def _lease_rows(db: Database, *, bounded: bool = False) -> list[_Row]:
    """The lease rows at the meta table's latest version. `bounded`: each of its two reads is given up on
    (as a stalled store) once it ran as long as its requests may take when the store answers."""
    table = db.meta_table

    def rows() -> list[dict[str, Any]]:
        return table.search().where(f"key = '{LEASE_KEY}'").select(["value"]).to_arrow().to_pylist()

    if bounded:
        _read_within(db, table.checkout_latest)
        found = _read_within(db, rows)
    else:
        table.checkout_latest()
        found = rows()
    return [_Row(Owner.parse(r["value"]), r["value"]) for r in found]


def _read_within(db: Database, read: Callable[[], T]) -> T:
    """A read of the lease, given up on as a stall once it ran as long as its requests may take when the
    store answers (it only reads: abandoning it leaves nothing half-done); unbounded on a local disk."""
    return within_requests(db.location, read, _LEASE_READ_REQUESTS, partial(_unanswered, db))


def _unanswered(db: Database) -> DatabaseError:
    return unanswered_failure(db.location, "cannot be locked for writing")


def _compare_and_set(db: Database, expected: str | None, new: Owner | None, *, bounded: bool = False) -> bool:
    """Replace the lease stored as `expected` by `new` (None: remove) only if it is still the current
    one; its commit is never given up on, only the read after it (`bounded`, as `_lease_rows`)."""
    from haiku_cli.store.reads import sql_string

    table = db.meta_table
    if expected is None:
        if new is None:
            return True
        table.merge_insert("key").when_not_matched_insert_all().execute(
            [{"key": LEASE_KEY, "value": _text(new)}]
        )
    else:
        old = sql_string(expected)
        if new is None:
            table.delete(f"key = '{LEASE_KEY}' AND value = {old}")
        else:
            merge = table.merge_insert("key").when_matched_update_all(where=f"target.value = {old}")
            merge.execute([{"key": LEASE_KEY, "value": _text(new)}])
    rows = _lease_rows(db, bounded=bounded)
    # Lance commits are serialised, so every writer reads the same first row: the earliest commit wins.
    current = rows[0].owner if rows else None
    return (current is None and new is None) or (current is not None and new is not None and current == new)


def _try_lease(db: Database, owner: Owner) -> _Lock | Owner | None:
    # Its reads are bounded: a store that stopped answering is named after two limits, not six. A commit
    # given up on by its own request limit fails the attempt, never retried: a lease row it may have
    # stored lapses as a dead writer's does.
    rows = _lease_rows(db, bounded=True)
    current = rows[0] if rows else None
    if current is not None and (current.owner is None or not current.owner.abandoned()):
        return current.owner
    # Stamped as it is taken: a writer that waited longer than the lease lives must not start lapsed.
    owner = Owner(**{**asdict(owner), "heartbeat": time.time()})
    with db.meta_guard:
        # The row is named by its value as stored: one of an older release, re-encoded by this one, would
        # name no row, and its lease would never be taken over.
        if _compare_and_set(db, current.text if current else None, owner, bounded=True):
            return _Lease(db, owner, current.owner if current else None)
        rows = _lease_rows(db, bounded=True)
        if owner in [row.owner for row in rows]:
            # Lost the race: take back the row that came second.
            _compare_and_set(db, _text(owner), None, bounded=True)
    return rows[0].owner if rows else None


def try_lock(db_or_path: Database | Path, owner: Owner, name: str) -> _Lock | Owner | None:
    """One attempt at the writer lock: the held lock, or the other writer (None: unknown holder)."""
    if isinstance(db_or_path, Path):
        return _try_file_lock(db_or_path, owner, name)
    path = db_or_path.location.local_path
    if path is not None:
        return _try_file_lock(path, owner, name)
    try:
        return _try_lease(db_or_path, owner)
    except DatabaseError:
        raise
    except Exception as exc:
        raise storage_failure(db_or_path.location, "cannot be locked for writing", exc) from exc


def acquire(target: Database | Path, name: str, policy: WaitPolicy) -> _Lock:
    """Take the writer lock, waiting as the policy says; exit-3 error naming the holder on timeout. Taking
    over a lapsed lease (or a gone holder's) is said once, after the wait."""
    lock = _wait_for_lock(target, name, policy)
    if isinstance(lock, _Lease) and lock.took_over is not None and policy.note is not None:
        policy.note(lock.took_over.taken_over(name))
    return lock


def _wait_for_lock(target: Database | Path, name: str, policy: WaitPolicy) -> _Lock:
    """Try for the lock until it is taken, or the policy's wait ran out (the error naming the holder)."""
    owner = Owner.me(LEASE_TTL_SECONDS if policy.lease_seconds is None else policy.lease_seconds)
    start = time.monotonic()
    noted = False
    folder = target if isinstance(target, Path) else target.location.local_path
    line = shelf_of(folder, None if isinstance(target, Path) else target.location)
    mine: Place | None = None  # this writer's place in the line of those waiting
    try:
        while True:
            if line is not None and someone_before(line, mine):
                holder = "another writer waiting before this one"
            else:
                got = try_lock(target, owner, name)
                if isinstance(got, _Lock):
                    return got
                holder = got.describe() if got is not None else "another haiku process"
            if line is not None and policy.seconds != 0:
                if mine is None:
                    mine = Place(line, owner.token).join()
                else:
                    mine.renew()
            if policy.seconds is not None and time.monotonic() - start >= policy.seconds:
                hint = (
                    "wait for it to finish, or let writers wait longer "
                    "(HAIKU_WRITE_WAIT or [storage] write_wait_seconds)"
                )
                raise DatabaseError(f"database '{name}' is being written by {holder}; {hint}")
            if policy.notify is not None and not noted:
                # Once per wait: a terminal shows it as one line counting the seconds, a log gets one line.
                policy.notify(f"waiting for database '{name}': it is being written by {holder}")
                noted = True
            time.sleep(_POLL_SECONDS)
    finally:
        if mine is not None:
            mine.leave()
        if noted and policy.waited is not None:
            policy.waited()


@contextmanager
def exclusive(db: Database, policy: WaitPolicy | None = None) -> Iterator[None]:
    """Hold the database's writer lock (re-entrant), with its tables at their latest versions.

    Taking the lock is what makes it safe to undo a journal left behind: its writer is provably gone.
    """
    if db.at_tag is not None:
        raise DatabaseError(
            f"database '{db.name}' is open at tag '{db.at_tag}', which is read-only; it cannot be written"
        )
    if PUBLISHED in db.meta:
        # Its readers read the versions its publish names: a write here would never be seen, and would
        # stand in the way of the next publish.
        raise DatabaseError(
            f"database '{db.name}' is a published copy; it cannot be written (write the database it was "
            "published from, then publish again)"
        )
    if db.writer_lock is not None:
        yield
        return
    lock = acquire(db, db.name, policy or db.write_policy or WaitPolicy())
    db.writer_lock = lock
    db.stalled = False  # a store that stalled during an earlier write may answer again
    try:
        catch_up(db)
        if PENDING_WRITE in db.meta:
            _recover(db)
        yield
    except BaseException as exc:
        note_stall(db, exc)  # a store that stopped answering is not asked to take the lease back
        raise
    finally:
        db.writer_lock = None
        lock.release()


def _recover(db: Database) -> None:
    """Undo the write a journal left behind, its failure one line as the write's own would be (a full
    disk that cut that write short fails its undo too: the journal stays for the next writer)."""
    from haiku_cli.store.journal import recover

    try:
        recover(db)
    except HaikuError:
        raise
    except Exception as exc:
        raise storage_failure(db.location, "cannot be written", exc) from exc


def ensure_held(db: Database) -> None:
    """Refuse to write on when this writer's object-store lease lapsed: another may own the database now."""
    lock = db.writer_lock
    if lock is not None and not lock.valid():
        raise DatabaseError(
            f"database '{db.name}' stopped being this writer's: its lease lapsed "
            f"(no renewal for {lock.held_for:g} s) and another writer may take over; "
            "this write was not committed, run it again"
        )


def kept_through_commit(db: Database) -> bool:
    """After a commit: whether it surely landed before any other writer could take this one's place.

    Lance has no commit conditional on another row, so a commit that started with the lease held may
    land after the lease lapsed. Another writer may only take over once the lease row is past its
    time-to-live, and it takes over by replacing that row: while the row is still this writer's, the
    commit came first (a writer taking over later finds no unfinished write to undo).
    """
    lock = db.writer_lock
    if not isinstance(lock, _Lease) or lock.valid():
        return True
    try:
        rows = _lease_rows(db)
    except Exception:
        return False  # cannot tell: the caller says the write may not be stored
    return bool(rows) and rows[0].owner == lock.owner


def checkpoint(point: str, spec: str | None = None) -> None:
    """A test hook: `HAIKU_TEST_PAUSE=point:DIR` (or `spec`) stops here until DIR/point.go exists.

    It lets tests interleave two writer processes deterministically; unset, it costs one lookup.
    """
    spec = spec or os.environ.get("HAIKU_TEST_PAUSE")
    if not spec:
        return
    name, _, folder = spec.partition(":")
    if name != point:
        return
    where = Path(folder)
    (where / f"{point}.{os.getpid()}.reached").touch()
    while not (where / f"{point}.go").exists():
        time.sleep(0.05)
