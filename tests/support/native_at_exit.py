"""A thread in native code that comes back to Python while the interpreter shuts down, as a read haiku
gave up on does when its wait ends then: LanceDB's synchronous reads are pyarrow's `read_all()` over a
generator that awaits each batch, so the thread comes back through pyarrow's C++ frames.

`python -c` runs `haiku ARGS` so (`command`): the thread waits inside pyarrow until the interpreter frees
the modules, which happens only in its shutdown, then is let go while the shutdown goes on.
"""

from __future__ import annotations

import runpy
import sys
import threading
import time
from collections.abc import Iterator

import pyarrow as pa

_SCHEMA = pa.schema([("x", pa.int64())])


def command(*args: str) -> str:
    """The `python -c` program that runs `haiku ARGS` with such a thread (run from the repository root)."""
    return f"from tests.support.native_at_exit import haiku; haiku(*{list(args)!r})"


def haiku(*args: str) -> None:
    """Start the thread, then run `haiku ARGS` as the `haiku` script does."""
    started, woken = threading.Event(), threading.Event()

    def batches() -> Iterator[pa.RecordBatch]:
        started.set()
        woken.wait()  # the GIL released, as a wait for LanceDB's loop is
        yield pa.record_batch([pa.array([1])], schema=_SCHEMA)

    reader = pa.RecordBatchReader.from_batches(_SCHEMA, batches())
    threading.Thread(target=reader.read_all, name="native-read", daemon=True).start()
    started.wait()
    # Freed only when the interpreter clears the modules at its shutdown.
    sys.modules["_wakes_at_shutdown"] = _WakesAtShutdown(woken)  # type: ignore[assignment]
    sys.argv = ["haiku", *args]
    runpy.run_module("haiku_cli", run_name="__main__")


class _WakesAtShutdown:
    def __init__(self, woken: threading.Event) -> None:
        self.woken = woken
        self.sleep = time.sleep  # kept: module globals are gone by then

    def __del__(self) -> None:
        self.woken.set()
        self.sleep(1)  # the GIL released: the thread takes it back now
