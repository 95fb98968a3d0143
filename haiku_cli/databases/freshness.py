"""Whether the sources of the documents a command shows changed since they were read.

The remembered file states are read once per database handle (kept until it catches up with a write,
store/source_tables.py), then each call makes a `stat` per document shown
(`haiku_cli.ingest.kinds.freshness`);
the stored content hash is read, and the file converted, only for the documents whose size or time
moved. No answer about a file is kept: a daemon, `mcp`, `serve` or `watch` looks again at each request.
"""

from __future__ import annotations

import asyncio
import os
import stat as stat_mode
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import anyio

from haiku_cli.config.settings import Settings
from haiku_cli.search.hits import SourceState
from haiku_cli.store import schema
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.document_parts import PART_OF, stored_parts
from haiku_cli.store.handle import parse_json_object
from haiku_cli.store.published import PUBLISHED
from haiku_cli.store.reads import in_list, rows_where
from haiku_cli.store.source_dirs import listed_dirs, moved_dirs
from haiku_cli.store.source_state import Freshness, by_stat, path_of
from haiku_cli.store.source_tables import (
    DELETE_BATCH,
    FileState,
    file_states,
    folder_sources,
    has_file_states,
    read_sources,
    states_of_documents,
    states_of_uris,
)

if TYPE_CHECKING:
    from haiku_cli.databases.log_results import SourceSummary
    from haiku_cli.store.doctor import Check

NOT_REMEMBERED = (
    "no remembered file state to compare: not added by add-src (or read out of a document that was not)"
)
REMOTE = "a URL or object: not checked (--check-remote asks)"
ON_OBJECT_STORAGE = "a database on object storage: its sources are not checked"
A_PUBLISHED_COPY = "a published copy: its sources are on the publisher's machine"


@dataclass(frozen=True, slots=True)
class SourceCheck:
    """One document's source state, and why when it is `missing` or `unknown`."""

    state: Freshness
    note: str | None = None

    @property
    def stale(self) -> bool:
        return self.state in (Freshness.CHANGED, Freshness.MISSING)

    @property
    def shown(self) -> SourceState:
        """The state as results carry it."""
        return self.state.value

    def fields(self) -> dict[str, str | None]:
        """As a result model's `source_state` and `source_note`."""
        return {"source_state": self.state.value, "source_note": self.note}


UNCHECKED = SourceCheck(Freshness.UNKNOWN, None)


@dataclass(frozen=True)
class RemoteCheck:
    """`--check-remote`: URLs and objects are asked too, each request bounded by the storage timeout."""

    settings: Settings

    def ask(self, db: Database, state: FileState) -> SourceCheck:
        from haiku_cli.ingest.kinds import Reading, kind_of
        from haiku_cli.ingest.objects import ObjectStores

        reading = Reading(self.settings.ingest, ObjectStores(self.settings, db.location.storage_options))
        timeout = self.settings.storage.timeout_seconds
        found, note = kind_of(state.uri).asked_freshness(state, reading, timeout)
        return SourceCheck(found, note)


async def check_documents(
    db: Database, document_ids: Iterable[str], remote: RemoteCheck | None = None
) -> dict[str, SourceCheck]:
    """The source state of each of these documents of one database (each looked at once); with `remote`,
    URLs and objects are asked too."""
    ids = list(dict.fromkeys(document_ids))
    if not ids:
        return {}
    if db.location.local_path is None and remote is None:
        # A shared database's files are mostly another machine's, and its side table a round trip away.
        return dict.fromkeys(ids, SourceCheck(Freshness.UNKNOWN, ON_OBJECT_STORAGE))
    if PUBLISHED in db.meta:
        return dict.fromkeys(ids, SourceCheck(Freshness.UNKNOWN, A_PUBLISHED_COPY))
    try:
        states = await states_of_documents(db, ids)
        states.update(await _files_of_parts(db, [d for d in ids if d not in states]))
    except Exception as exc:  # a damaged side table never fails the command that shows hits
        return dict.fromkeys(ids, SourceCheck(Freshness.UNKNOWN, f"remembered states unreadable: {exc}"))
    # Each file looked at once (by its own document's id): a mail and its attachments share one look.
    files = {state.document_id: state for state in states.values()}
    looked = {file_id: first_look(state) for file_id, state in files.items()}
    checks = {
        d: SourceCheck(looked[states[d].document_id], _note(states[d].uri, looked[states[d].document_id]))
        if d in states
        else SourceCheck(Freshness.UNKNOWN, NOT_REMEMBERED)
        for d in ids
    }
    moved = [
        d for d in ids if d in states and checks[d].state is Freshness.CHANGED and states[d].size is not None
    ]
    if moved:  # size or time moved: the content decides, each file read once for its documents shown
        await _by_content(db, {d: states[d] for d in moved}, checks)
    if remote is not None:
        asked = {states[d].document_id: states[d] for d, c in checks.items() if c.note == REMOTE}
        answers = await asyncio.gather(*(anyio.to_thread.run_sync(remote.ask, db, s) for s in asked.values()))
        by_file = dict(zip(asked, answers, strict=True))
        checks.update({d: by_file[states[d].document_id] for d, c in checks.items() if c.note == REMOTE})
    return checks


async def _files_of_parts(db: Database, document_ids: list[str]) -> dict[str, FileState]:
    """For documents read out of another (a mail's attachments, a mailbox's messages), the file state of
    the file they were read out of (`part_of`): they are as fresh as it is. One read of the documents
    without a state of their own."""
    if not document_ids or not await has_file_states(db):
        return {}  # no file to be part of: no read of the documents
    rows = await rows_where(db, db.documents, in_list("id", document_ids), ["id", "metadata"])
    part_of: dict[str, str] = {}
    for row in rows.to_pylist():
        parent = parse_json_object(row["metadata"]).get(PART_OF)
        if isinstance(parent, str):
            part_of[row["id"]] = parent
    by_uri = await states_of_uris(db, part_of.values())
    return {d: by_uri[uri] for d, uri in part_of.items() if uri in by_uri}


async def check_shown(
    dbs: Sequence[Database], shown: Iterable[tuple[str, str]], remote: RemoteCheck | None = None
) -> dict[tuple[str, str], SourceCheck]:
    """The source state of each shown (database name, document id), one read per database, at once."""
    wanted: dict[str, list[str]] = {}
    for database, doc_id in shown:
        wanted.setdefault(database, []).append(doc_id)
    holding = [db for db in dbs if db.name in wanted]
    if len(holding) == 1:  # the usual case: no tasks to gather (a task costs as much as the stats)
        found = [await check_documents(holding[0], wanted[holding[0].name], remote)]
    else:
        found = await asyncio.gather(*(check_documents(db, wanted[db.name], remote) for db in holding))
    return {(db.name, d): c for db, checks in zip(holding, found, strict=True) for d, c in checks.items()}


async def _by_content(db: Database, moved: dict[str, FileState], checks: dict[str, SourceCheck]) -> None:
    """Documents whose file's stat moved (by id, their file's state): `changed` only if what would be
    stored differs (a `touch` is not a change); a file holding several of them is read once."""
    try:
        rows = await rows_where(db, db.documents, in_list("id", list(moved)), ["id", "uri", "content_hash"])
    except Exception:
        return  # the stat already said `changed`
    by_file: dict[str, dict[str, str]] = {}  # file's document id -> {uri: stored hash}
    ids_by_uri: dict[str, str] = {}  # a part's uri, or "" for a file's own document -> its id
    for doc_id, uri, stored in zip(
        *(rows.column(c).to_pylist() for c in ("id", "uri", "content_hash")), strict=True
    ):
        file_id = moved[doc_id].document_id
        if stored and (uri or doc_id == file_id):
            key = "" if doc_id == file_id else uri  # "": the file's own document, whatever its uri
            by_file.setdefault(file_id, {})[key] = stored
            ids_by_uri[key] = doc_id
    for file_id, hashes in by_file.items():
        state = next(s for s in moved.values() if s.document_id == file_id)
        found = await anyio.to_thread.run_sync(_documents_by_kind, state, hashes)
        for uri, freshness in found.items():
            checks[ids_by_uri[uri]] = SourceCheck(freshness, _note(state.uri, freshness))


def first_look(state: FileState) -> Freshness:
    """A source's state at a glance: a local file by its size and time (its content compared only when
    those moved); any other kind as it answers without being asked over the network."""
    if state.uri.startswith("file://"):
        return by_stat(state)
    return _by_kind(state)


def _by_kind(state: FileState, content_hash: str | None = None) -> Freshness:
    # The kinds, and the converters a moved file is read with, load only when one is looked at this way.
    from haiku_cli.ingest.kinds import freshness

    return freshness(state, content_hash)


def _documents_by_kind(state: FileState, stored: dict[str, str]) -> dict[str, Freshness]:
    from haiku_cli.ingest.kinds import freshness_of_documents

    return freshness_of_documents(state, stored)


def _note(uri: str, found: Freshness) -> str | None:
    """Why a source is `missing` or `unknown`, in a few words."""
    if found in (Freshness.FRESH, Freshness.CHANGED):
        return None
    if not uri.startswith("file://"):
        return REMOTE
    path = path_of(uri)
    try:
        seen = os.stat(path)
    except FileNotFoundError:
        return "the file is gone"
    except OSError as exc:
        return f"cannot be looked at: {exc.strerror or exc}"
    if stat_mode.S_ISDIR(seen.st_mode):
        return "now a directory"
    return None if stat_mode.S_ISREG(seen.st_mode) else "no longer a regular file"


class StaleCount(NamedTuple):
    """How many of a source's documents changed, and how many vanished, since they were read."""

    changed: int = 0
    missing: int = 0


def stale_by_source(db: Database, states: Sequence[FileState]) -> dict[str, StaleCount]:
    """How many of each source's documents changed or vanished since they were read, the documents read
    out of its files (a mailbox's messages, a mail's attachments) counted too."""
    counts: dict[str, StaleCount] = {}
    for state, documents in _looked_at(db, states):
        for found in documents.values():
            was = counts.get(state.source, StaleCount())
            if found is Freshness.CHANGED:
                counts[state.source] = was._replace(changed=was.changed + 1)
            elif found is Freshness.MISSING:
                counts[state.source] = was._replace(missing=was.missing + 1)
    return counts


_Family = dict[str, dict[str, str]]
"""A file's uri -> the documents read out of it (`stored_parts`): each one's uri -> its id."""


def _looked_at(
    db: Database, states: Sequence[FileState], parts: _Family | None = None
) -> list[tuple[FileState, dict[str, Freshness]]]:
    """Each state's documents as their file is now, by id: the file's own and those read out of it.

    A stat each; the stored parts are read only when a file moved or vanished (unless given), and a file
    whose stat moved is read once, each of its documents compared by content (a `touch` is not a change,
    and a mailbox whose listing is as it was may hold a changed message).
    """
    looked = [(state, first_look(state)) for state in states]
    stale = {s.uri for s, found in looked if found in (Freshness.CHANGED, Freshness.MISSING)}
    if parts is None:
        parts = stored_parts(db, stale) if stale else {}
    moved = [s for s, found in looked if found is Freshness.CHANGED]
    hashes = _stored_hashes(db, [i for s in moved for i in (s.document_id, *parts.get(s.uri, {}).values())])
    by_file: dict[str, dict[str, Freshness]] = {}  # a file two sources gave is read once
    out: list[tuple[FileState, dict[str, Freshness]]] = []
    for state, found in looked:
        family = parts.get(state.uri, {})
        if found is not Freshness.CHANGED:
            out.append((state, dict.fromkeys([state.document_id, *family.values()], found)))
            continue
        if state.uri not in by_file:
            ids = {"": state.document_id, **family}
            stored = {uri: hashes[i] for uri, i in ids.items() if hashes.get(i)}
            by_file[state.uri] = _documents_by_kind(state, stored) if stored else {}
        now = by_file[state.uri]
        documents = {state.document_id: now.get("", Freshness.CHANGED)}
        documents.update((i, now.get(uri, Freshness.CHANGED)) for uri, i in family.items())
        out.append((state, documents))
    return out


def folder_changes(db: Database) -> dict[str, list[str] | None]:
    """The local folder sources with a file made, removed or renamed since a sync last listed them: the
    directories (uris) whose time moved, the topmost of each branch; None for a folder no sync listed
    yet (added, not synced since), which only a walk of all of it can tell."""
    listed = listed_dirs(db)
    out: dict[str, list[str] | None] = {}
    for source, dirs in listed.items():
        moved = sorted(moved_dirs(dirs))
        tops = [uri for uri in moved if not any(uri.startswith(top.rstrip("/") + "/") for top in moved)]
        if tops:
            out[source] = tops
    if not db.may_have_side_table(schema.SOURCES):
        return out
    for folder in folder_sources(db):
        # (a folder on object storage is listed by `sync` only)
        if os.path.isabs(folder) and folder not in listed:
            out[folder] = None
    return out


def stale_check(db: Database, option: str) -> Check:
    """`doctor`'s count of documents whose local source changed or vanished since they were indexed,
    counted as `haiku sources` counts them: each document once, those read out of a file too."""
    from haiku_cli.store.doctor import Check  # doctor's, not a search's

    if PUBLISHED in db.meta:
        return Check(check="stale_sources", status="ok", detail=A_PUBLISHED_COPY)
    states = [s for s in file_states(db) if s.uri.startswith("file://")]
    stale: dict[str, Freshness] = {}  # by document: one two sources gave counts once
    for _, documents in _looked_at(db, states):
        stale.update((i, f) for i, f in documents.items() if f in (Freshness.CHANGED, Freshness.MISSING))
    changed = sum(1 for f in stale.values() if f is Freshness.CHANGED)
    missing = len(stale) - changed
    if not stale:
        return Check(check="stale_sources", status="ok", detail="every document's local source is as indexed")
    return Check(
        check="stale_sources",
        status="warn",
        detail=f"{changed} document(s) whose source changed, {missing} whose source is gone since indexed",
        fix=f"haiku sync{option}",
    )


def _stored_hashes(db: Database, document_ids: Sequence[str]) -> dict[str, str]:
    ids = list(dict.fromkeys(document_ids))
    found: dict[str, str] = {}
    for start in range(0, len(ids), DELETE_BATCH):
        rows = wait(
            rows_where(
                db, db.documents, in_list("id", ids[start : start + DELETE_BATCH]), ["id", "content_hash"]
            )
        )
        found.update(zip(rows.column("id").to_pylist(), rows.column("content_hash").to_pylist(), strict=True))
    return found


def summarised_sources(db: Database) -> list[SourceSummary]:
    """`haiku sources`: each remembered source with its documents (those read out of its files, a
    mailbox's messages and a mail's attachments, included), and how many changed or vanished."""
    from haiku_cli.databases.log_results import SourceSummary  # `haiku sources`' own, not a search's

    states = file_states(db)
    parts = stored_parts(db, {state.uri for state in states}) if states else {}
    counts: Counter[str] = Counter()
    stale: dict[str, StaleCount] = {}
    for state, documents in _looked_at(db, states, parts):
        counts[state.source] += len(documents)
        changed = sum(1 for f in documents.values() if f is Freshness.CHANGED)
        missing = sum(1 for f in documents.values() if f is Freshness.MISSING)
        was = stale.get(state.source, StaleCount())
        stale[state.source] = StaleCount(was.changed + changed, was.missing + missing)
    listed = listed_dirs(db)
    return [
        SourceSummary(
            **s.model_dump(),
            documents=counts[s.source],
            **stale.get(s.source, StaleCount())._asdict(),
            dirs_changed=len(moved_dirs(listed.get(s.source, {}), unsettled=False)),
        )
        for s in read_sources(db)
    ]
