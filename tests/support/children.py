"""Child processes of tests: Ctrl-C reaches them as it would from a terminal, and none outlives its test."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def takes_ctrl_c() -> None:
    """A `preexec_fn`: the child handles SIGINT by default, even where this process inherited it ignored
    (a script run in the background); an ignored signal would stay ignored across exec, and a SIGINT
    sent to the child would then do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ctrl_c_preexec() -> Callable[[], None] | None:
    """The `preexec_fn` for a child that Ctrl-C must reach: `takes_ctrl_c` only where this process has
    SIGINT ignored. Otherwise the child inherits the default already, and without a `preexec_fn` it is
    spawned rather than forked (a fork here is what lance warns of as not fork-safe)."""
    return takes_ctrl_c if signal.getsignal(signal.SIGINT) == signal.SIG_IGN else None


@contextmanager
def reaped(*procs: subprocess.Popen) -> Iterator[None]:
    """Kill and wait for each child still running when the block ends, however it ends."""
    try:
        yield
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
