"""A blocking read given up on after a while: a store that stopped answering must not hold a command."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from haiku_cli.store.abandoned import give_up_at_exit
from haiku_cli.store.failures import request_timeout
from haiku_cli.store.location import Location

T = TypeVar("T")


def with_deadline(call: Callable[[], T], seconds: float, on_timeout: Callable[[], Exception]) -> T:
    """Run a blocking call, giving up after `seconds` with `on_timeout()`.

    The call runs in a daemon thread that is abandoned on timeout: a store that stopped answering
    must not hold the command (or the interpreter's exit) hostage, so what it still runs on LanceDB's
    loop is cancelled at exit (`store.abandoned`). Only for calls that only read.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller's thread as is
            box["error"] = exc

    thread = threading.Thread(target=target, name="haiku-deadline", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        give_up_at_exit()
        raise on_timeout()
    if "error" in box:
        raise box["error"]
    return box["value"]


def within_requests(
    location: Location, call: Callable[[], T], requests: int, on_timeout: Callable[[], Exception]
) -> T:
    """A read of `location` given up on with `on_timeout()` once it ran as long as its `requests` may take
    when the store answers, and a second: LanceDB asks a stalled store the same request four to six times,
    each waiting out the whole limit, so a read that ran that long had one go unanswered. Unbounded where
    the store cannot stall (a local disk) or its limit is unknown."""
    seconds = request_timeout(location) if location.can_stall else None
    if seconds is None:
        return call()
    return with_deadline(call, requests * seconds + 1, on_timeout)
