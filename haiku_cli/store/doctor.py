"""`haiku doctor` at the store: what is wrong with one open database, and mending what can be mended safely.

Each check reads the database as a reader would (at the state before an unfinished write); a failed one
names the command that mends it, and `mend` applies those that lose nothing: stray chunk and picture rows,
identical duplicate documents, an unfinished write's journal or a lapsed lease, and index and version
upkeep (`vacuum`).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from haiku_cli.store import schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.document_writes import delete_documents
from haiku_cli.store.handle import PENDING_WRITE, Database
from haiku_cli.store.indexes import MAX_INDEX_DELTAS, VECTOR_INDEX, IndexState, index_states
from haiku_cli.store.maintenance import MAX_VERSIONS, database_info, vacuum
from haiku_cli.store.published import describe as describe_publish
from haiku_cli.store.published import published_info
from haiku_cli.store.reads import in_list, rows_where
from haiku_cli.store.sizes import human_size
from haiku_cli.store.source_tables import read_sources
from haiku_cli.store.transaction import atomic_write, storage_errors
from haiku_cli.store.vector_segments import most_segments
from haiku_cli.store.writer_lock import LEASE_KEY, LEASE_TTL_SECONDS, Owner, exclusive, try_lock

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb.table import Table

Status = Literal["ok", "warn", "fail"]
# A picture row whose bytes are missing: `pictures` and the page that shows it have nothing to show.
_NO_BYTES = "data IS NULL OR size IS NULL OR size = 0"


class Check(BaseModel):
    """One check of one database: its outcome, what was found, and the command that mends it."""

    check: str
    status: Status
    detail: str
    fix: str | None = None  # the command that mends it (None: nothing to do, or nothing haiku can do)
    safe_fix: bool = False  # `doctor --fix` applies it
    fixed: bool = False  # `doctor --fix` applied it


def check_database(
    db: Database, embedder_name: str | None, local_path: Callable[[str], Path | None]
) -> list[Check]:
    """Every check of one open database (a reader's handle); `local_path`: where a remembered source
    lives on this machine, None for one only the network can reach (asked by `sync`, not here)."""
    option = _option(db)
    checks = [_schema(db, option), _embedder(db, embedder_name, option), _indexes(db, option)]
    documents = _column_rows(db, db.documents, ["id", "uri", "content_hash", "updated_at"])
    chunk_owners = set(_column_rows(db, db.chunks, ["document_id"]).column("document_id").to_pylist())
    ids = set(documents.column("id").to_pylist())
    checks += [
        _count_check(
            "documents_without_chunks",
            sorted(ids - chunk_owners),
            "document(s) have no chunks, so no search finds them",
            f"haiku rebuild{option} (re-chunks every document), or haiku delete ID{option}",
            safe=False,
        ),
        _count_check(
            "chunks_without_documents",
            sorted(chunk_owners - ids),
            "document id(s) are named by chunks whose document is gone: search returns them",
            f"haiku doctor --fix{option}",
            safe=True,
        ),
        _duplicates(documents, option),
        _unfinished_write(db, option),
        *_upkeep(db, option, local_path),
        _pictures(db, ids, option),
    ]
    return checks


def _upkeep(db: Database, option: str, local_path: Callable[[str], Path | None]) -> list[Check]:
    info = published_info(db.meta)
    if info is None:
        return [_versions(db, option), _vanished_sources(db, option, local_path)]
    # A published copy's sources are on the publisher's machine, and its versions are its publishes'
    # (kept for readers in the middle of one): neither is this reader's to mend.
    detail = f"a copy of {describe_publish(info)}; its sources and versions are the publisher's"
    return [Check(check="published", status="ok", detail=detail)]


def _option(db: Database) -> str:
    chosen = db.location.chosen_by
    return f" {chosen}" if chosen else ""


def _column_rows(db: Database, table: Table, columns: list[str]) -> pa.Table:
    return wait(rows_where(db, table, None, columns))


def _schema(db: Database, option: str) -> Check:
    found = db.schema_version
    if found < schema.SCHEMA_VERSION:
        return Check(
            check="schema",
            status="warn",
            detail=f"schema version {found}, older than this haiku's {schema.SCHEMA_VERSION} (read as it is)",
            fix=f"haiku vacuum{option}",
            safe_fix=True,
        )
    return Check(check="schema", status="ok", detail=f"schema version {found}")


def _embedder(db: Database, configured: str | None, option: str) -> Check:
    mine = db.embedder
    detail = f"written with {mine.name} ({mine.dimension} dims)"
    if configured is not None and configured != mine.name:
        return Check(
            check="embedder",
            status="fail",
            detail=f"{detail}, but {configured} is configured: searches and adds refuse it",
            fix=f"configure {mine.name} again, or haiku rebuild{option} (re-embeds every document)",
        )
    return Check(check="embedder", status="ok", detail=detail)


def _indexes(db: Database, option: str) -> Check:
    states = wait(index_states(db.chunks))
    unindexed = max((s.unindexed_rows for s in states), default=0)
    piled = [s for s in states if s.segments > _most_segments(s)]
    if not states and db.chunks.count_rows():
        return Check(
            check="indexes", status="fail", detail="the chunks have no index", fix=f"haiku vacuum{option}",
            safe_fix=True,
        )  # fmt: skip
    problems = []
    if unindexed:
        problems.append(f"{unindexed} row(s) not yet indexed (searched directly, more slowly)")
    problems += [f"{s.name} in {s.segments} segments (each search reads them all)" for s in piled]
    if problems:
        return Check(
            check="indexes", status="warn", detail="; ".join(problems), fix=f"haiku vacuum{option}",
            safe_fix=True,
        )  # fmt: skip
    return Check(check="indexes", status="ok", detail=f"{len(states)} index(es), every row indexed")


def _count_check(name: str, found: list[str], what: str, fix: str, *, safe: bool) -> Check:
    if not found:
        return Check(check=name, status="ok", detail="none")
    shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
    return Check(check=name, status="fail", detail=f"{len(found)} {what} ({shown})", fix=fix, safe_fix=safe)


def duplicate_groups(documents: pa.Table) -> list[list[str]]:
    """Documents stored more than once (same uri, same content), each group newest first."""
    groups: dict[tuple[str, str], list[tuple[object, str]]] = defaultdict(list)
    for row in documents.select(["id", "uri", "content_hash", "updated_at"]).to_pylist():
        if row["uri"] and row["content_hash"]:
            groups[(row["uri"], row["content_hash"])].append((row["updated_at"], row["id"]))
    return [[i for _, i in sorted(g, reverse=True)] for g in groups.values() if len(g) > 1]


def _duplicates(documents: pa.Table, option: str) -> Check:
    groups = duplicate_groups(documents)
    extra = [i for g in groups for i in g[1:]]
    check = _count_check(
        "duplicate_documents",
        extra,
        "document(s) repeat another with the same uri and content",
        f"haiku doctor --fix{option} (keeps the newest of each), or haiku delete ID{option}",
        safe=True,
    )
    return check


def _unfinished_write(db: Database, option: str) -> Check:
    lease = Owner.parse(db.meta.get(LEASE_KEY, "")) if LEASE_KEY in db.meta else None
    if PENDING_WRITE not in db.meta:
        if lease is not None and lease.abandoned():
            return Check(
                check="unfinished_write", status="fail",
                detail=f"a lapsed or dead writer's lease is left ({lease.describe()})",
                fix=f"haiku doctor --fix{option} (any write also takes it over)", safe_fix=True,
            )  # fmt: skip
        return Check(check="unfinished_write", status="ok", detail="no write under way")
    if _writer_alive(db, lease):
        return Check(check="unfinished_write", status="ok", detail="a write is under way (read as before it)")
    return Check(
        check="unfinished_write",
        status="fail",
        detail="a write died half-way: its journal is left (readers read the state before it)",
        fix=f"haiku doctor --fix{option} (any write also undoes it)",
        safe_fix=True,
    )


def _writer_alive(db: Database, lease: Owner | None) -> bool:
    if db.location.local_path is None:
        return lease is not None and not lease.abandoned()
    got = try_lock(db, Owner.me(LEASE_TTL_SECONDS), db.name)
    if isinstance(got, Owner) or got is None:
        return True
    got.release()
    return False


def _versions(db: Database, option: str) -> Check:
    info = wait(database_info(db))
    tables = [db.documents, db.chunks, db.meta_table, *db.side_tables().values()]
    counts = {t.name: len(t.list_versions()) for t in tables}
    size = f", {human_size(info.size_bytes)} on disk" if info.size_bytes is not None else ""
    detail = f"{sum(counts.values())} versions in {len(counts)} tables{size}"
    piled = [name for name, n in counts.items() if n > MAX_VERSIONS + 1]
    if piled:
        return Check(
            check="versions", status="warn", detail=f"{detail}; old versions piled up in {', '.join(piled)}",
            fix=f"haiku vacuum{option}", safe_fix=True,
        )  # fmt: skip
    return Check(check="versions", status="ok", detail=detail)


def _vanished_sources(db: Database, option: str, local_path: Callable[[str], Path | None]) -> Check:
    # Only local paths are looked at: a URL or an object-store prefix is asked by `sync`, over the network.
    local = [(s.source, path) for s in read_sources(db) if (path := local_path(s.source)) is not None]
    gone = [source for source, path in local if not os.path.exists(path)]
    if not gone:
        return Check(check="sources", status="ok", detail="every remembered local source is there")
    return Check(
        check="sources",
        status="fail",
        detail=f"{len(gone)} remembered source(s) vanished: {', '.join(gone[:5])}",
        fix=f"bring them back, or haiku forget-src SOURCE{option}",
    )


def _pictures(db: Database, documents: set[str], option: str) -> Check:
    table = db.pictures
    if table is None:
        return Check(check="pictures", status="ok", detail="no pictures")
    owners = _column_rows(db, table, ["document_id"]).column("document_id").to_pylist()
    rows = wait(rows_where(db, table, _NO_BYTES, ["document_id", "reference"])).to_pylist()
    empty = [f"{r['document_id'][:8]}/{r['reference']}" for r in rows]
    stray = set(owners) - documents
    problems = []
    if empty:
        problems.append(f"{len(empty)} picture(s) without bytes ({', '.join(empty[:5])})")
    if stray:
        problems.append(f"pictures of {len(stray)} document(s) that are gone")
    if not problems:
        return Check(check="pictures", status="ok", detail=f"{len(owners)} picture(s), each with its bytes")
    return Check(
        check="pictures", status="fail", detail="; ".join(problems), fix=f"haiku doctor --fix{option}",
        safe_fix=True,
    )  # fmt: skip


def _most_segments(state: IndexState) -> int:
    # The vector index is kept in segments of bounded size, so a large one has many (and is meant to).
    if state.name == VECTOR_INDEX:
        return most_segments(state.indexed_rows)
    return 1 + MAX_INDEX_DELTAS


def mend(db: Database, failed: list[Check], place: Callable[[Database], int] | None = None) -> list[str]:
    """Apply the safe fixes of the failed checks under the writer lock; the names of the checks mended.

    Taking the lock undoes a write that died half-way (and takes a lapsed lease over); the row removals
    are one all-or-nothing write; `vacuum` last, for indexes, versions and an older layout (`place`
    given to it, as `haiku vacuum` gives it, so older chunks get their places too).
    """
    wanted = {c.check for c in failed if c.safe_fix}
    if not wanted:
        return []
    mended = []
    with exclusive(db):
        if "unfinished_write" in wanted:
            mended.append("unfinished_write")
        rows = wanted & {"chunks_without_documents", "duplicate_documents", "pictures"}
        if rows:
            with atomic_write(db), storage_errors(db, "cannot be mended"):
                _remove_strays(db, rows)
            mended += sorted(rows)
        upkeep = wanted & {"schema", "indexes", "versions"}
        if upkeep:
            vacuum(db, place)
            mended += sorted(upkeep)
    return mended


def _remove_strays(db: Database, which: set[str]) -> None:
    documents = _column_rows(db, db.documents, ["id", "uri", "content_hash", "updated_at"])
    ids = documents.column("id").to_pylist()
    if "chunks_without_documents" in which:
        owners = set(_column_rows(db, db.chunks, ["document_id"]).column("document_id").to_pylist())
        if gone := sorted(owners - set(ids)):
            db.chunks.delete(in_list("document_id", gone))
    if "duplicate_documents" in which:
        extra = [i for g in duplicate_groups(documents) for i in g[1:]]
        if extra:
            delete_documents(db, extra)  # joins this write
            ids = [i for i in ids if i not in set(extra)]
    if "pictures" in which and db.pictures is not None:
        stray = f" OR NOT ({in_list('document_id', ids)})" if ids else " OR true"
        db.pictures.delete(_NO_BYTES + stray)
