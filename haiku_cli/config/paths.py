"""Where haiku keeps its configuration and data, with environment overrides."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

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
