"""One background event loop on which synchronous code awaits the store's reads, which are written once,
async (`store.reads`): the write path, run in worker threads, reads through it.

A call from a worker thread hands its read to this loop and waits, as LanceDB's own synchronous API
hands each call to its loop; the loop is started on first use, so commands that only await never pay
for it.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def wait(read: Coroutine[Any, Any, T]) -> T:
    """Run an async read to its end from synchronous code, and return its result (or raise its error)."""
    loop = _background_loop()
    if threading.current_thread() is _thread:
        read.close()
        raise RuntimeError("a read awaited on the blocking loop's own thread would wait for itself")
    future = asyncio.run_coroutine_threadsafe(read, loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()  # a Ctrl-C in the waiting thread stops the read too
        raise


def started_loop() -> asyncio.AbstractEventLoop | None:
    """The background loop, or None while no read has started it."""
    return _loop


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_loop.run_forever, name="haiku-reads", daemon=True)
            _thread.start()
        return _loop


def _forget_after_fork() -> None:
    # The loop's thread does not survive a fork: the child starts its own on first use.
    global _loop, _thread, _lock
    _loop, _thread, _lock = None, None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
