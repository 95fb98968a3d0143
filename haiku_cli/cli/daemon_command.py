"""`haiku daemon`: keep one warm haiku process that answers this user's read commands."""

from __future__ import annotations

import os
import signal
import socket
import time
from typing import Annotated

import typer

from haiku_cli.cli import daemon_client as wire
from haiku_cli.cli import output
from haiku_cli.cli.daemon_start import AUTO_ENV
from haiku_cli.cli.options import workspace
from haiku_cli.cli.running import add_command
from haiku_cli.errors import InputError

# Run once before listening, so the first command a caller sends finds everything it needs loaded.
_WARM_QUERY = "warm up"


def register(app: typer.Typer) -> None:
    """Add the daemon command to the app."""
    add_command(app, "daemon", daemon)


def daemon(
    ctx: typer.Context,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the daemon that is running, then exit.")] = False,
) -> None:
    """Answer search, list, info and get from one process kept running (until Ctrl-C or --stop).

    `haiku search` and the other read commands then hand their command line to it over a socket only
    this user can reach, and print what it answers: the same output and exit code, without the start-up
    cost. Without a daemon, or when it was started with another config file, haiku version or Python,
    they run in their own process as always.

    A read command that finds no daemon starts one in the background itself (`[daemon] auto`, on
    unless set false or HAIKU_NO_DAEMON=1); that one exits after `[daemon] idle_minutes` (15) unasked,
    or once haiku's code or its config file changed. One started here runs until stopped.

    Examples:

    \b
      haiku daemon &                 later searches answer from it
      haiku daemon --stop
    """
    started_by_a_command = os.environ.pop(AUTO_ENV, None) == "1"
    wire.STARTUP_ENV.pop(AUTO_ENV, None)  # what a fresh process starts with, as its caller started
    if not wire.supported():
        raise InputError("haiku daemon needs unix sockets that name their peer (Linux)")
    path = wire.socket_path()
    if stop:
        _stop(path)
        return
    from haiku_cli.cli.daemon_server import ConfigFile, Daemon
    from haiku_cli.config.paths import config_path

    ws = workspace(ctx)  # the config is read and checked as any command's is
    if started_by_a_command and not ws.settings.daemon.auto:
        return
    idle = ws.settings.daemon.idle_minutes * 60 if started_by_a_command else None
    root = ctx.find_root()
    served = Daemon(root.command, ConfigFile.read(config_path((root.obj or {}).get("config"))), path)
    bundled = ws.settings.embedder.model is None or ws.settings.embedder.model.startswith("haiku:")
    # Each read command's own modules too (with several databases `list` and `info` stop at asking which).
    served.warm_up([["search", "--type", "fts", _WARM_QUERY], ["list", "--limit", "1"], ["info"]])
    if bundled:  # a remote embedder is not sent a query nobody asked
        served.warm_up([["search", "--type", "vector", _WARM_QUERY]])
    sock = served.listen()
    try:
        output.note(
            f"daemon answering search, list, info and get on {path} (pid {os.getpid()}); Ctrl-C stops it"
        )
        served.serve(sock, idle_seconds=idle)
    finally:
        served.close(sock)
    output.note("daemon stopped")


def _stop(path: str) -> None:
    try:
        wire.check_private(path)
    except FileNotFoundError:
        raise InputError("no haiku daemon is running") from None
    except wire.NotPrivate as exc:
        raise InputError(str(exc)) from None
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(5)
    try:
        probe.connect(path)
        pid, uid, _gid = wire.peer_ids(probe)
    except OSError:
        raise InputError("no haiku daemon is running (its socket was left behind)") from None
    finally:
        probe.close()
    if uid != os.geteuid():
        raise InputError(f"the process on {path} belongs to another user")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    output.note(f"daemon stopped (pid {pid})")
