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

A `haiku` process that gave up on a call also ends without shutting the interpreter down (`leave`): a call
given up on may be inside native code when the interpreter finalizes, and comes back from it there.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import sys
import threading
from contextlib import suppress
from typing import NoReturn

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


def gave_up() -> bool:
    """Whether this process left a call to the store running (`give_up_at_exit`)."""
    return _registered


def leave(status: int) -> NoReturn:
    """End the process with exit `status` as the interpreter's exit would, less its shutdown.

    A call given up on runs on in its thread, and LanceDB's synchronous reads run inside pyarrow's C++:
    a query's `to_arrow()` is pyarrow's `read_all()` over a generator that awaits each batch on LanceDB's
    loop. When that wait ends while the interpreter shuts down (the call cancelled at exit, or failed by
    the store's own timeout), the thread takes the GIL, and CPython (3.11-3.13) ends a thread doing so
    with `pthread_exit`, whose unwinding through pyarrow's frames aborts the whole process ("terminate
    called without an active exception", or "Fatal Python error: PyGILState_Release"): exit -6 after
    the command's own message. Without the shutdown no thread comes back. What it would have done is
    free memory the OS takes back: what a command stores is committed before it returns (a write a
    stalled store cut off is left as a killed writer leaves it, undone by the next writer, its lease
    lapsing), so the exit waits only for what a normal one waits for before its shutdown.
    """
    # As `Py_FinalizeEx` does before shutting down: wait for non-daemon threads, run the exit handlers
    # (`cancel_in_flight`, LanceDB's runtime shutdown, logging's flush), then flush what is buffered.
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            with suppress(Exception):  # a closed pipe: nothing more can be said on it
                stream.flush()
    os._exit(status)


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
