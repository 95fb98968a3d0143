"""How much slower than an idle machine this one runs now: for the few tests whose subject is a time limit.

A test of a lease or a heartbeat must give the code under test a limit it can keep on a busy machine (the
suite passes beside a CPU burner on each core); the limit scales with the run queue per core, bounded so a
pathological load still finishes.
"""

from __future__ import annotations

import os


def slowness(cap: float = 8.0) -> float:
    """The 1-minute load per core, at least 1 and at most `cap`."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        return 1.0
    return min(cap, max(1.0, load / (os.cpu_count() or 1)))
