"""Starting `haiku daemon` in the background when a read command finds none (`[daemon] auto`, on by default).

The command that starts it still answers in its own process; later ones are handed to the daemon, which
exits once idle for `[daemon] idle_minutes` or when haiku's code or its config file changes. Like
daemon_client.py this runs before typer, pydantic or LanceDB are imported: standard library only.
"""

from __future__ import annotations

import fcntl
import os
import stat
import sys
import tomllib
from pathlib import Path

from haiku_cli.cli import daemon_client as wire

# Set in the environment of a daemon started this way: it exits when idle, and quietly when not wanted.
AUTO_ENV = "HAIKU_DAEMON_AUTO"
LOCK_NAME = "daemon.lock"
_held: int | None = None


def start_if_absent(argv: list[str]) -> int | None:
    """Start a daemon detached from this process when `argv` is a read command, none is listening and the
    config allows it; its pid, else None. Never raises: the command runs in-process whatever happens."""
    try:
        if not _wanted(argv):
            return None
        return _spawn(_config_args(argv))
    except (OSError, ValueError):
        return None


def _wanted(argv: list[str]) -> bool:
    if os.environ.get(wire.OFF_ENV, "") not in ("", "0") or not wire.supported():
        return False
    if wire.command_of(argv) is None or any(key.endswith("_COMPLETE") for key in os.environ):
        return False
    if os.path.lexists(wire.socket_path()):  # one is there: busy, declining, or another config's
        return False
    if _starting():
        return False
    return auto_enabled(_explicit_config(argv))


def _starting() -> bool:
    """Whether a daemon holds the start lock (one is starting, or runs): checked without taking it."""
    try:
        fd = os.open(os.path.join(wire.runtime_dir(), LOCK_NAME), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def hold_lock(folder: str) -> int | None:
    """Take the start lock in the private runtime `folder` for this process's life (kept once taken); None
    when another process holds it: of daemons started at once (commands finding none), one serves."""
    global _held
    if _held is None:
        fd = os.open(os.path.join(folder, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        _held = fd
    return _held


def auto_enabled(explicit: Path | None) -> bool:
    """`[daemon] auto` of the config file a command would read: true unless it says false. A file that
    cannot be read or parsed starts nothing: the command itself says what is wrong with it."""
    from haiku_cli.config.paths import config_path, read_config_bytes
    from haiku_cli.errors import HaikuError

    try:
        text = read_config_bytes(config_path(explicit))
    except FileNotFoundError:
        return True
    except (OSError, HaikuError):
        return False
    try:
        daemon = tomllib.loads(text.decode("utf-8")).get("daemon", {})
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(daemon, dict) and daemon.get("auto", True) is True


def _explicit_config(argv: list[str]) -> Path | None:
    found = None
    for i, arg in enumerate(argv[1:], start=1):
        if arg == "--config" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--config="):
            found = arg.removeprefix("--config=")
    return Path(found) if found else None


def _config_args(argv: list[str]) -> list[str]:
    explicit = _explicit_config(argv)
    return [] if explicit is None else ["--config", os.path.abspath(explicit)]


def _spawn(config_args: list[str]) -> int:
    import subprocess

    # The environment this process started with: the daemon must read at start what a fresh process
    # would (daemon_client.STARTUP_ENV); its own session keeps it out of this terminal's signals.
    env = {**wire.STARTUP_ENV, AUTO_ENV: "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "haiku_cli.cli.daemon_start", str(os.getpid()), *config_args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    proc.returncode = 0  # not waited for: it outlives this process, and its new parent reaps it
    return proc.pid


def _serve_after(caller: int, config_args: list[str]) -> None:
    """Become `haiku daemon` once the command that started this one has exited: its warm-up then takes
    no CPU from that command's answer. Gives up at once when another daemon holds the start lock."""
    folder = wire.runtime_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return  # `haiku daemon` says what is wrong with the folder; started in the background, nothing
    if hold_lock(folder) is None:
        return
    _wait_for_exit(caller)
    sys.argv = ["haiku", *config_args, "daemon"]
    import runpy

    runpy.run_module("haiku_cli", run_name="__main__")  # as `python -m haiku_cli daemon` runs


def _wait_for_exit(pid: int) -> None:
    import select

    try:
        fd = os.pidfd_open(pid)
    except OSError:  # gone already
        return
    try:
        select.select([fd], [], [], _WAIT_FOR_CALLER_S)
    finally:
        os.close(fd)


_WAIT_FOR_CALLER_S = 600.0  # a command still running after this: warm up beside it


if __name__ == "__main__":
    import importlib

    # By its own name: the start lock taken is then the one `haiku daemon` finds held (`_held`).
    importlib.import_module("haiku_cli.cli.daemon_start")._serve_after(int(sys.argv[1]), sys.argv[2:])
