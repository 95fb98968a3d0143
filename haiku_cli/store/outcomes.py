"""What this process's writes of documents left standing, for the line a Ctrl-C ends a command with.

A Ctrl-C reaches the command as KeyboardInterrupt after the write's own handling (the event loop
cancels the task first), so what the write kept is noted here, where the command's front door reads
it back: `mark()` before running the command, `since(mark)` after.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass

_RECENT = 256  # a long-running watch notes a write per sync: only the latest are of use


@dataclass(frozen=True)
class WriteOutcome:
    """One write of documents that ended: committed whole (`stored`), or interrupted, keeping the
    `documents` (with their `chunks`) that were committed whole before its last keep point."""

    database: str
    stored: bool
    documents: int
    chunks: int


_lock = threading.Lock()
_numbers = itertools.count(1)
_last = 0
_noted: deque[tuple[int, WriteOutcome]] = deque(maxlen=_RECENT)


def mark() -> int:
    """A point to read later outcomes from."""
    return _last


def note(outcome: WriteOutcome) -> None:
    """Record how a write ended."""
    global _last
    with _lock:
        _last = next(_numbers)
        _noted.append((_last, outcome))


def since(point: int) -> list[WriteOutcome]:
    """The outcomes noted after `point` (a `mark()`), oldest first."""
    with _lock:
        return [outcome for number, outcome in _noted if number > point]
