"""What the commands over a database's records of its writes return (its remembered sources, its syncs,
its write log): pydantic models whose `model_dump()` is exactly the CLI's `--json`, as in results.py.

Apart from results.py so that a search, a list or a get loads none of the modules that keep those records.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from haiku_cli.ingest.reports import SyncReport
from haiku_cli.store.command_log import WriteRecord
from haiku_cli.store.facts import TableVersion
from haiku_cli.store.source_tables import RememberedSource


class DatabaseHistory(BaseModel):
    """`haiku history`: the write commands that made a database, and every version of its tables, newest
    first (a database written before commands were logged has versions without commands)."""

    database: str
    writes: list[WriteRecord] = Field(default_factory=list)
    versions: list[TableVersion]


class SourceSummary(RememberedSource):
    """A remembered source and how many documents it holds now, and how many of those changed or
    vanished since they were read (`haiku sync` brings them up to date)."""

    documents: int = 0
    changed: int = 0
    missing: int = 0
    # A folder's directories in which a file was made, removed or renamed since its last sync
    # (new files `sync` or `search --sync` would add; those of a folder never synced are not known)
    dirs_changed: int = 0


class SourceList(BaseModel):
    """What `haiku sources` lists: the sources one database remembers."""

    database: str
    sources: list[SourceSummary]


class ForgottenSource(BaseModel):
    """What `haiku forget-src` did: the source forgotten and the documents deleted with it."""

    database: str
    source: str
    deleted_documents: int  # 0 with --keep-documents
    kept_documents: int  # documents left: kept on request, or given by another source too


class SyncRun(BaseModel):
    """What `haiku sync` did, per database."""

    databases: list[SyncReport]

    @property
    def failed(self) -> bool:
        """Whether some item or source of some database could not be read."""
        return any(r.failed for r in self.databases)
