"""A blocking read given up on after a while: a store that stopped answering must not hold a command."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from haiku_cli.store.abandoned import give_up_at_exit

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
