"""The configuration as `haiku config show` reports it: where it came from and what it resolved to."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar, TypeVar

from pydantic import BaseModel

from haiku_cli.config.paths import data_dir
from haiku_cli.config.settings import DatabaseSettings, Settings, SourceSettings

HIDDEN = "<hidden>"
# Storage options are printed so the output loads as a config again, except values that are secrets.
_SECRET = re.compile(r"secret|token|password|session|credential", re.IGNORECASE)
_WithOptions = TypeVar("_WithOptions", DatabaseSettings, SourceSettings)


class ResolvedConfig(BaseModel):
    """The config file's path (and whether it exists), the data dir, and the settings in effect."""

    HIDDEN: ClassVar[str] = HIDDEN  # what a secret's value is replaced with

    config_file: str
    config_exists: bool
    data_dir: str  # where the `default` database lives when no databases are configured
    settings: Settings


def resolved_config(settings: Settings, config_file: Path | None) -> ResolvedConfig:
    """The settings in effect, with secret-looking storage option values and the MCP token hidden."""
    databases = {name: _hidden(db) for name, db in settings.databases.items()}
    sources = {prefix: _hidden(entry) for prefix, entry in settings.sources.items()}
    mcp = settings.mcp
    if mcp.http_token is not None:
        mcp = mcp.model_copy(update={"http_token": HIDDEN})
    return ResolvedConfig(
        config_file=str(config_file) if config_file is not None else "",
        config_exists=config_file is not None and config_file.exists(),
        data_dir=str(data_dir()),
        settings=settings.model_copy(update={"databases": databases, "sources": sources, "mcp": mcp}),
    )


def _hidden(entry: _WithOptions) -> _WithOptions:
    options = {k: HIDDEN if _SECRET.search(k) else v for k, v in entry.storage_options.items()}
    return entry.model_copy(update={"storage_options": options})
