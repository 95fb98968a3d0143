"""The commands that wrote a database, kept in its meta table so `haiku history` can name them.

Table versions alone say only that something changed (and `vacuum` drops the old ones); each write
command's entry says which command it was, when, and the table versions it left.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from pydantic import BaseModel

from haiku_cli.store.handle import Database
from haiku_cli.store.journal import table_versions
from haiku_cli.store.records import UtcDatetime

WRITE_LOG = "write_log"
KEPT_ENTRIES = 500  # the newest entries kept: a log that grows with every write would slow each one


class WriteRecord(BaseModel):
    """One write command: what it was, when it finished, and the table versions it left."""

    operation: str
    timestamp: UtcDatetime
    versions: dict[str, int]


def record(db: Database, operation: str, before: dict[str, int]) -> None:
    """Log `operation` if the tables moved past `before` (run under the writer lock, after the write)."""
    after = table_versions(db)
    if after == before:
        return
    entries = json.loads(db.meta.get(WRITE_LOG) or "[]")[-(KEPT_ENTRIES - 1) :]
    entries.append(
        {"operation": operation[:300], "timestamp": datetime.now(UTC).isoformat(), "versions": after}
    )
    db.set_meta(WRITE_LOG, json.dumps(entries, ensure_ascii=False))


def write_log(db: Database) -> list[WriteRecord]:
    """The logged write commands, newest first."""
    entries = json.loads(db.meta.get(WRITE_LOG) or "[]")
    return [WriteRecord.model_validate(e) for e in reversed(entries)]
