"""Where haiku keeps its configuration and data, with environment overrides."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "haiku"


def config_path(explicit: Path | None = None) -> Path:
    """The config file: `--config` beats `HAIKU_CONFIG` beats the platform's user config dir."""
    if explicit is not None:
        return explicit.expanduser()
    env = os.environ.get("HAIKU_CONFIG")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def named_by(explicit: Path | None = None) -> str | None:
    """What named the config file (`--config` or `HAIKU_CONFIG`); None when it is the default location."""
    if explicit is not None:
        return "--config"
    return "HAIKU_CONFIG" if os.environ.get("HAIKU_CONFIG") else None


def data_dir() -> Path:
    """Where the default database lives: `HAIKU_DATA_DIR` or the platform's user data dir."""
    env = os.environ.get("HAIKU_DATA_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME))


def sessions_dir() -> Path:
    """Where chat sessions and the line editor's history live: `sessions/` in the data dir."""
    return data_dir() / "sessions"
