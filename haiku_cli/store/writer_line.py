"""The line of writers waiting for a local database's lock, so that they are served in order.

A lock file is taken by whoever asks first after it is let go, which is the writer that let it go when
it writes again at once (`haiku watch`, syncing source after source): one that waits would poll in vain
until its wait ran out. So a writer that has to wait puts a marker in the database folder, and one
that wants the lock takes it only when no live marker came before its own.
"""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import suppress
from pathlib import Path

_PREFIX = "haiku-writer.wait."
# A marker from another host cannot be checked by its pid: one not renewed for this long is of a waiter gone.
_STALE_SECONDS = 30.0


class Place:
    """One writer's marker in the line (`join` it, `renew` it while waiting, `leave` it)."""

    def __init__(self, folder: Path, token: str) -> None:
        self.folder = folder
        self.token = token
        self.at = time.time_ns()
        self.path = folder / f"{_PREFIX}{token}"

    def join(self) -> Place:
        """Take a place at the end of the line (a folder that cannot hold one leaves this writer out)."""
        record = {"pid": os.getpid(), "host": socket.gethostname(), "at": self.at}
        with suppress(OSError):
            self.path.write_text(json.dumps(record), encoding="utf-8")
        return self

    def renew(self) -> None:
        """Show that this writer still waits."""
        with suppress(OSError):
            os.utime(self.path)

    def leave(self) -> None:
        """Leave the line (the lock taken, or the wait given up)."""
        with suppress(OSError):
            self.path.unlink()


def is_marker(name: str) -> bool:
    """Whether a file of a database folder is a waiting writer's marker."""
    return name.startswith(_PREFIX)


def someone_before(folder: Path, mine: Place | None) -> bool:
    """Whether a live writer joined the line before `mine` (None: before any writer asking now)."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(_PREFIX)]
    except OSError:
        return False
    for name in names:
        token = name[len(_PREFIX) :]
        if mine is not None and token == mine.token:
            continue
        at = _joined_at(folder / name)
        if at is None:
            continue
        if mine is None or (at, token) < (mine.at, mine.token):
            return True
    return False


def _joined_at(path: Path) -> int | None:
    """When the marker's writer joined, or None when it is gone (its marker is then removed)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        renewed = path.stat().st_mtime
        pid, host, at = int(record["pid"]), str(record["host"]), int(record["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # being written, or removed meanwhile: looked at again at the next poll
    # On this host the pid tells; another's waiter renews its marker at each poll.
    alive = _alive(pid) if host == socket.gethostname() else time.time() - renewed < _STALE_SECONDS
    if not alive:
        with suppress(OSError):
            path.unlink()
        return None
    return at


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
