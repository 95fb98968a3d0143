"""How long a second writer waits for the first: settings a reader carries without loading the writer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_WAIT_SECONDS = 120.0


@dataclass(frozen=True)
class WaitPolicy:
    """How long a second writer waits for the first, and where it says that it is waiting.

    `notify` is told once when a wait begins, `waited` once when it ends (the lock taken, or given up),
    `note` when the lock was taken from a writer presumed dead (its object-store lease lapsed).
    """

    seconds: float | None = DEFAULT_WAIT_SECONDS  # None: wait as long as it takes; 0: fail at once
    notify: Callable[[str], None] | None = None
    lease_seconds: float | None = None  # an object-store lease's time-to-live (None: LEASE_TTL_SECONDS)
    waited: Callable[[], None] | None = None
    note: Callable[[str], None] | None = None
