"""The line of writers waiting for a database's writer lock, so that they are served in order.

A lock (a local database's lock file, an `s3://` database's lease) is taken by whoever asks first after
it is let go, which is the writer that let it go when it writes again at once (`haiku watch`, syncing
source after source): one that waits would poll in vain until its wait ran out. So a writer that has to
wait puts a marker beside the database's tables (a file in its folder, an object under its prefix), and
one that wants the lock takes it only when no live marker came before its own.
"""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from haiku_cli.store.writer_owner import alive as is_alive

if TYPE_CHECKING:
    from pyarrow.fs import FileSystem

    from haiku_cli.store.location import Location

_PREFIX = "haiku-writer.wait."
# A marker from another host cannot be checked by its pid: one not renewed for this long is of a waiter gone.
_STALE_SECONDS = 30.0
# A marker on object storage is renewed by writing it again (one request): not at every poll.
_OBJECT_RENEW_SECONDS = 5.0


class Shelf(Protocol):
    """Where a database's markers lie, and how each is written, renewed, read and removed."""

    renew_every: float

    def names(self) -> list[str]:
        """The names of the markers there (an unreadable shelf has none)."""
        ...

    def put(self, name: str, text: str) -> None:
        """Write a marker whole (a shelf that cannot hold one leaves its writer out of the line)."""
        ...

    def renew(self, name: str, text: str) -> None:
        """Show that a marker's writer still waits."""
        ...

    def look(self, name: str) -> tuple[dict[str, Any], float] | None:
        """A marker's record and when it was last renewed (None: being written, or gone)."""
        ...

    def remove(self, name: str) -> None:
        """Remove a marker (no matter if it is gone)."""
        ...


class Files:
    """The markers of a local database: files in its folder, renewed by their modification time."""

    renew_every = 0.0

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def names(self) -> list[str]:
        try:
            return [n for n in os.listdir(self.folder) if is_marker(n)]
        except OSError:
            return []

    def put(self, name: str, text: str) -> None:
        with suppress(OSError):
            (self.folder / name).write_text(text, encoding="utf-8")

    def renew(self, name: str, text: str) -> None:
        with suppress(OSError):
            os.utime(self.folder / name)

    def look(self, name: str) -> tuple[dict[str, Any], float] | None:
        path = self.folder / name
        try:
            return json.loads(path.read_text(encoding="utf-8")), path.stat().st_mtime
        except (OSError, ValueError):
            return None

    def remove(self, name: str) -> None:
        with suppress(OSError):
            (self.folder / name).unlink()


class Objects:
    """The markers of an `s3://` database: objects under its prefix, renewed by writing them again with
    the time in their record (an object's own time is the store's clock, the lease's heartbeat the
    writers'). Any request that fails leaves the line as it is: the lease alone still excludes."""

    renew_every = _OBJECT_RENEW_SECONDS

    def __init__(self, fs: FileSystem, root: str) -> None:
        self.fs = fs
        self.root = root

    def names(self) -> list[str]:
        from pyarrow.fs import FileSelector

        try:
            found = self.fs.get_file_info(FileSelector(self.root, allow_not_found=True))
        except (OSError, ValueError):
            return []
        return [f.base_name for f in found if is_marker(f.base_name)]

    def put(self, name: str, text: str) -> None:
        record = {**json.loads(text), "renewed": time.time()}
        with suppress(OSError, ValueError), self.fs.open_output_stream(f"{self.root}/{name}") as out:
            out.write(json.dumps(record).encode())

    def renew(self, name: str, text: str) -> None:
        self.put(name, text)

    def look(self, name: str) -> tuple[dict[str, Any], float] | None:
        try:
            with self.fs.open_input_stream(f"{self.root}/{name}") as got:
                record = json.loads(got.read())
            return record, float(record["renewed"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def remove(self, name: str) -> None:
        with suppress(OSError, ValueError):
            self.fs.delete_file(f"{self.root}/{name}")


def shelf_of(folder: Path | None, location: Location | None) -> Shelf | None:
    """The shelf of a local database's folder, or of an `s3://` database (None: a store without one)."""
    if folder is not None:
        return Files(folder)
    if location is None or not location.uri.startswith("s3://"):
        return None
    from haiku_cli.store.failures import request_timeout
    from haiku_cli.store.object_files import folder_of

    # Each request is bounded as the database's own are: a stalled store holds the line up no longer.
    where = folder_of(location, once_within=request_timeout(location))
    return Objects(where.fs, where.root)


class Place:
    """One writer's marker in the line (`join` it, `renew` it while waiting, `leave` it)."""

    def __init__(self, shelf: Shelf, token: str) -> None:
        self.shelf = shelf
        self.token = token
        self.at = time.time_ns()
        self.name = f"{_PREFIX}{token}"
        self._text = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "at": self.at})
        self._renewed = time.monotonic()

    def join(self) -> Place:
        """Take a place at the end of the line."""
        self.shelf.put(self.name, self._text)
        return self

    def renew(self) -> None:
        """Show that this writer still waits."""
        if time.monotonic() - self._renewed >= self.shelf.renew_every:
            self.shelf.renew(self.name, self._text)
            self._renewed = time.monotonic()

    def leave(self) -> None:
        """Leave the line (the lock taken, or the wait given up)."""
        self.shelf.remove(self.name)


def is_marker(name: str) -> bool:
    """Whether a file of a database folder is a waiting writer's marker."""
    return name.startswith(_PREFIX)


def someone_before(shelf: Shelf, mine: Place | None) -> bool:
    """Whether a live writer joined the line before `mine` (None: before any writer asking now)."""
    for name in shelf.names():
        token = name[len(_PREFIX) :]
        if mine is not None and token == mine.token:
            continue
        at = _joined_at(shelf, name)
        if at is None:
            continue
        if mine is None or (at, token) < (mine.at, mine.token):
            return True
    return False


def _joined_at(shelf: Shelf, name: str) -> int | None:
    """When the marker's writer joined, or None when it is gone (its marker is then removed)."""
    found = shelf.look(name)
    if found is None:
        return None  # being written, or removed meanwhile: looked at again at the next poll
    record, renewed = found
    try:
        pid, host, at = int(record["pid"]), str(record["host"]), int(record["at"])
    except (KeyError, TypeError, ValueError):
        return None
    # On this host the pid tells; another's waiter renews its marker while it waits.
    alive = is_alive(pid) if host == socket.gethostname() else time.time() - renewed < _STALE_SECONDS
    if not alive:
        shelf.remove(name)
        return None
    return at
