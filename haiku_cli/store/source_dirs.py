"""The directories of each remembered folder as a sync last listed them, with their modification times.

A file made, removed or renamed in a directory moves that directory's time, so a `stat` per remembered
directory tells `search --sync` whether a folder gained or lost files since it was read, without walking
it. A side table created by the first sync that lists a folder (older databases open unchanged). It is
written after the sync's own write, under the same lock: a sync that fails keeps the times of the one
before, and the directories it changed are looked at again next time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from haiku_cli.store import schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.handle import Database
from haiku_cli.store.reads import rows_where, sql_string
from haiku_cli.store.source_state import path_of

# pyarrow is imported where a table is written: a server imports this module before its first search.
if TYPE_CHECKING:
    import pyarrow as pa

_MEMO = "source_dirs"
# The time stored for a directory changed too recently to be sure of (ingest/sync.py): always looked at.
UNSETTLED = -1


def source_dirs_schema() -> pa.Schema:
    """One row per directory a folder source's last sync listed: its `file://` uri and time."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("source", pa.string(), nullable=False),
            pa.field("uri", pa.string(), nullable=False),
            pa.field("mtime_ns", pa.int64()),
        ]
    )


def listed_dirs(db: Database) -> dict[str, dict[str, int]]:
    """Each folder source's listed directories (uri -> time), read once per database handle."""
    memo = db.read_memo.get(_MEMO)
    if memo is not None:
        return memo
    table = db.side_table(schema.SOURCE_DIRS) if db.may_have_side_table(schema.SOURCE_DIRS) else None
    found: dict[str, dict[str, int]] = {}
    if table is not None:
        rows = wait(rows_where(db, table, None, ["source", "uri", "mtime_ns"]))
        for source, uri, mtime in zip(
            *(rows.column(c).to_pylist() for c in ("source", "uri", "mtime_ns")), strict=True
        ):
            found.setdefault(source, {})[uri] = mtime
    db.read_memo[_MEMO] = found
    return found


def moved_dirs(listed: Mapping[str, int], *, unsettled: bool = True) -> list[str]:
    """The listed directories (uris) whose time moved, or that are gone or cannot be looked at; with
    `unsettled`, those stored as `UNSETTLED` too."""
    moved = []
    for uri, mtime in listed.items():
        if mtime == UNSETTLED:
            if unsettled:
                moved.append(uri)
            continue
        try:
            now = os.stat(path_of(uri)).st_mtime_ns
        except OSError:
            now = None
        if now != mtime:
            moved.append(uri)
    return moved


def put_listed_dirs(db: Database, source: str, listed: Mapping[str, int], under: Sequence[str] = ()) -> None:
    """Store what a sync of `source` listed, replacing what was stored for it (with `under`, for these
    uris and those below them only: a sync of part of the folder)."""
    stored = listed_dirs(db).get(source, {})
    replaced = {u: m for u, m in stored.items() if not under or any(_below(u, top) for top in under)}
    if replaced == dict(listed):
        return  # the usual sync: nothing moved, nothing written
    db.read_memo.pop(_MEMO, None)
    table = db.create_side_table(schema.SOURCE_DIRS, source_dirs_schema())
    where = f"source = {sql_string(source)}"
    if under:
        near = [f"uri = {sql_string(u)} OR uri LIKE {sql_string(u.rstrip('/') + '/%')}" for u in under]
        where += " AND (" + " OR ".join(near) + ")"
    table.delete(where)
    # LIKE's `_` and `%` match more than themselves: rows it took that are not below `under` go back.
    kept = {u: m for u, m in stored.items() if u not in replaced}
    rows = [{"source": source, "uri": u, "mtime_ns": m} for u, m in {**kept, **listed}.items()]
    if rows:
        import pyarrow as pa

        table.merge_insert(["source", "uri"]).when_matched_update_all().when_not_matched_insert_all().execute(
            pa.Table.from_pylist(rows, schema=source_dirs_schema())
        )


def forget_dirs(db: Database, source: str) -> None:
    """Drop a forgotten source's directories."""
    db.read_memo.pop(_MEMO, None)
    table = db.side_table(schema.SOURCE_DIRS)
    if table is not None:
        table.delete(f"source = {sql_string(source)}")


def _below(uri: str, top: str) -> bool:
    return uri == top or uri.startswith(top.rstrip("/") + "/")
