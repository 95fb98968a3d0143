"""Who holds a database's writer lock: the record a writer leaves, and whether its process still lives.

A record names its holder by host and pid, and by the machine that pid is counted on (the kernel's boot
and the pid namespace): a writer on the same machine can then tell that a holder was killed, where the
same host name alone could be another container's or another computer's.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import uuid
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from functools import cache


@dataclass(frozen=True)
class Owner:
    """Who holds a database's writer lock."""

    token: str
    pid: int
    host: str
    command: str
    started: float
    heartbeat: float
    ttl: float = 60.0  # the lease's time-to-live, set by its holder (records of older releases: 60 s)
    machine: str = ""  # where `pid` is counted (`this_machine`); "" where it cannot be told

    def describe(self) -> str:
        """`pid 123 on host (haiku add-src, since 02:51:03 UTC)`."""
        since = datetime.fromtimestamp(self.started, UTC).strftime("%H:%M:%S UTC")
        return f"pid {self.pid} on {self.host} ({self.command}, since {since})"

    @classmethod
    def me(cls, ttl: float) -> Owner:
        """A fresh owner record for this process, whose lease (if it takes one) lives `ttl` seconds."""
        now = time.time()
        argv = [os.path.basename(sys.argv[0] or "python"), *sys.argv[1:2]]
        return cls(
            uuid.uuid4().hex, os.getpid(), socket.gethostname(), " ".join(argv), now, now, ttl, this_machine()
        )

    def expired(self) -> bool:
        """Whether this lease went unrenewed for its whole time-to-live: its holder is presumed dead."""
        return time.time() - self.heartbeat >= self.ttl

    def abandoned(self) -> bool:
        """Whether this lease may be taken over: it lapsed, or its holder died on this machine."""
        return self.expired() or self.died_here()

    def died_here(self) -> bool:
        """Whether the holder ran on this machine and its process is gone (killed, say): its lease need
        not be waited out. Never true for a holder elsewhere, or one whose machine is not recorded."""
        here = this_machine()
        return (
            bool(here) and self.machine == here and self.host == socket.gethostname() and not alive(self.pid)
        )

    def taken_over(self, name: str) -> str:
        """The line saying this holder's lease was taken over, and why (see `abandoned`)."""
        why = (
            f"its lease was not renewed for {self.ttl:g} s, so its writer is presumed dead"
            if self.expired()
            else "its process is gone"
        )
        return f"database '{name}': took over the writer lease of {self.describe()}: {why}"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        """Decode a stored owner record (None when absent or unreadable); fields a later release added
        are passed over."""
        try:
            record = json.loads(text)
            known = {f.name for f in fields(cls)}
            return cls(**{k: v for k, v in record.items() if k in known})
        except (ValueError, TypeError, AttributeError):
            return None


@cache
def this_machine() -> str:
    """The running kernel's boot and this process's pid namespace ("" where they cannot be read): two
    processes with the same value count pids alike."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    return f"{boot}:{namespace}"


def alive(pid: int) -> bool:
    """Whether a process of this machine is running (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
