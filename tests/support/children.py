"""Child processes of tests: Ctrl-C reaches them as it would from a terminal, and none outlives its test."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


def takes_ctrl_c() -> None:
    """A `preexec_fn`: the child handles SIGINT by default, even where this process inherited it ignored
    (a script run in the background); an ignored signal would stay ignored across exec, and a SIGINT
    sent to the child would then do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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
