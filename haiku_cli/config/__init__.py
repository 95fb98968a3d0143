"""Configuration: where it is read from and what it says."""

from haiku_cli.config.loader import load_settings
from haiku_cli.config.paths import config_path, data_dir
from haiku_cli.config.settings import (
    DatabaseSettings,
    EmbedderSettings,
    ModelSettings,
    SandboxSettings,
    SearchSettings,
    Settings,
)

__all__ = [
    "DatabaseSettings",
    "EmbedderSettings",
    "ModelSettings",
    "SandboxSettings",
    "SearchSettings",
    "Settings",
    "config_path",
    "data_dir",
    "load_settings",
]
