"""Calls to a store that haiku gave up on do not hold the process's exit.

LanceDB (0.40) registers `lancedb._lancedb.shutdown_runtime` with `atexit`: at exit it waits, up to 5 s,
for every call still running on its Tokio runtime before shutting the runtime down. A call given up on (a
read abandoned by `with_deadline`, a lease renewal left running after a stall) waits on a store that does
not answer, so a command that gave up ended 5 s after its message. Each such call is an asyncio task on
LanceDB's background loop (its synchronous API) or on haiku's own (`store.blocking`): cancelling the task
cancels the Rust future under it (pyo3's done callback drops it), which ends the call there and then, so
LanceDB's hook finds nothing in flight and returns at once. Only reads and a lease's renewal are ever given
up on: cancelling them leaves the store as a killed process would, which the journal and the lease are
designed for.
"""

from __future__ import annotations

import asyncio
import atexit
import sys
import threading
from contextlib import suppress

from haiku_cli.store import blocking

_lock = threading.Lock()
_registered = False


def give_up_at_exit() -> None:
    """Note that a call to the store was left running: at exit, what is still in flight is cancelled."""
    global _registered
    with _lock:
        if _registered:
            return
        _registered = True
    # LanceDB is loaded by now (a call to it was given up on), so its hook was registered first; `atexit`
    # runs the last registered first, so this runs before LanceDB's wait.
    atexit.register(cancel_in_flight)


def cancel_in_flight() -> None:
    """Cancel every task still running on LanceDB's background loop and on haiku's."""
    for loop in _loops():
        with suppress(RuntimeError):  # closed meanwhile: nothing left on it to cancel
            loop.call_soon_threadsafe(_cancel_all, loop)


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    # Runs on the loop's own thread: the set of its tasks is only safe to walk there.
    for task in asyncio.all_tasks(loop):
        task.cancel()


def _loops() -> list[asyncio.AbstractEventLoop]:
    # Looked up, not imported: a process that never loaded LanceDB's sync API has no loop to cancel on.
    background = sys.modules.get("lancedb.background_loop")
    lance = getattr(getattr(background, "LOOP", None), "loop", None)
    loops = [loop for loop in (lance, blocking.started_loop()) if isinstance(loop, asyncio.AbstractEventLoop)]
    return [loop for loop in loops if not loop.is_closed()]
