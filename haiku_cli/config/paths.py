"""Where haiku keeps its configuration and data, with environment overrides."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs

from haiku_cli.errors import InputError

APP_NAME = "haiku"


def config_path(explicit: Path | None = None) -> Path:
    """The config file: `--config`, else `HAIKU_CONFIG`, else config.toml in `HAIKU_CONFIG_DIR` or the
    platform's user config dir. Always absolute, so a later `cd` cannot change which file it is."""
    if explicit is not None:
        return _absolute(explicit)
    if env := os.environ.get("HAIKU_CONFIG"):
        return _absolute(env)
    if env := os.environ.get("HAIKU_CONFIG_DIR"):
        return _absolute(env) / "config.toml"
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def named_by(explicit: Path | None = None) -> str | None:
    """What named the config file (`--config`, `HAIKU_CONFIG` or `HAIKU_CONFIG_DIR`); None for the default."""
    if explicit is not None:
        return "--config"
    return next((env for env in ("HAIKU_CONFIG", "HAIKU_CONFIG_DIR") if os.environ.get(env)), None)


def missing_is_an_error(explicit: Path | None = None) -> str | None:
    """What named the config file when its absence is an error (a named file, or a named folder that is
    not there); None when a missing file means the defaults."""
    named = named_by(explicit)
    if named == "HAIKU_CONFIG_DIR" and config_path(explicit).parent.is_dir():
        return None
    return named


def data_dir() -> Path:
    """Where the default database lives: `HAIKU_DATA_DIR` (made absolute) or the platform's user data dir."""
    if env := os.environ.get("HAIKU_DATA_DIR"):
        return _absolute(env)
    return Path(platformdirs.user_data_dir(APP_NAME))


def _absolute(path: Path | str) -> Path:
    # Resolved once, against the directory haiku started in: `config show` prints where things really
    # are, and a host that changes directory later (chat, the MCP server) keeps using the same files.
    return Path(os.path.abspath(Path(path).expanduser()))


def sessions_dir() -> Path:
    """Where chat sessions and the line editor's history live: `sessions/` in the data dir."""
    return data_dir() / "sessions"


MAX_CONFIG_BYTES = 1 << 20  # a config names databases and settings: a few KB; more is not a config


def read_config_bytes(path: Path) -> bytes:
    """The config file's bytes; a file over MAX_CONFIG_BYTES, or anything but a regular file (a device
    such as /dev/zero, a FIFO), is refused before it is read without bound or waited on."""
    # Non-blocking: opening a FIFO without a writer would wait for one.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"config file {path} is not a regular file; name a TOML file")
        data = file.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise InputError(
            f"config file {path} is larger than {MAX_CONFIG_BYTES // (1 << 20)} MB; "
            "a config holds settings only: name the right file"
        )
    return data
