"""Chunk rows written by a cluster's workers as uncommitted Lance fragments, committed by the writer.

A worker turns its documents' chunks into the rows a local add would store (same analyzer, same
columns) and writes them as data files in the chunks table's folder: files no version of the table
names, so no reader sees them. The writer then commits all of an add's fragments in one Append, under
its lock and inside the add's journalled write; undoing the write (a failure, a crash found by the next
writer) restores the version from before it. Fragment files that no version names (a task run again
after its worker died, a task cancelled, an Append that failed) are removed before the journal goes:
the journal of such a write says so (journal.FRAGMENTS), so recovery removes them too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from haiku_cli.errors import DatabaseError
from haiku_cli.store.handle import Database
from haiku_cli.store.indexes import lance_dataset
from haiku_cli.store.journal import remove_stray_fragments
from haiku_cli.store.location import Location
from haiku_cli.store.reads import in_list
from haiku_cli.store.records import DocumentSummary, NewChunk
from haiku_cli.store.writer_lock import checkpoint, ensure_held

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb.table import Table


@dataclass(frozen=True)
class FragmentTarget:
    """Where a worker writes chunk fragments: the database, its chunks table as a Lance dataset, and the
    exact columns and file format that table holds (an older layout takes the columns it has)."""

    location: Location
    table: str
    dataset_uri: str
    schema: pa.Schema
    storage_version: str


def fragment_target(db: Database) -> FragmentTarget:
    """The chunks table of `db` as workers write to it (read under the writer lock, before the add)."""
    dataset = lance_dataset(db.chunks)
    if dataset is None:
        raise DatabaseError("writing chunks from a cluster needs pylance (pip install pylance)")
    return FragmentTarget(
        db.location, db.chunks_table_name, dataset.uri, dataset.schema, dataset.data_storage_version
    )


_analyzers: dict[tuple[str, str], Table] = {}


def _analyzer(target: FragmentTarget) -> Table:
    """The chunks table opened once per worker process: its full-text index analyses the search texts."""
    from haiku_cli.store.database import connect

    key = (target.location.connect_uri, target.table)
    if key not in _analyzers:
        _analyzers[key] = connect(target.location).open_table(target.table)
    return _analyzers[key]


def chunk_rows(target: FragmentTarget, chunks: Sequence[tuple[DocumentSummary, NewChunk]]) -> pa.Table:
    """The rows a local add would store for chunks of new documents, in the chunks table's columns (run by
    a worker, which holds them as Arrow until it has a fragment's worth)."""
    import pyarrow as pa

    from haiku_cli.store.document_writes import make_chunk_rows

    rows = make_chunk_rows(_analyzer(target), chunks) if chunks else []
    return pa.Table.from_pylist(rows, schema=target.schema)  # columns the table does not hold are left out


def write_chunk_fragments(target: FragmentTarget, rows: pa.Table) -> list[Any]:
    """Write chunk rows as uncommitted fragments (run by a worker); their Lance metadata."""
    import lance.fragment

    if rows.num_rows == 0:
        return []
    return lance.fragment.write_fragments(
        rows,
        target.dataset_uri,
        schema=target.schema,
        data_storage_version=target.storage_version,
        storage_options=target.location.storage_options or None,
    )


def commit_fragments(db: Database, fragments: Sequence[Any], dropped: Sequence[str] = ()) -> None:
    """Append the fragments to the chunks table in one commit, inside the add's journalled write, then
    delete the rows of `dropped` documents (ones the writer did not store after all: a source given
    twice), and remove fragment files no version names."""
    import lance

    if not db.in_write:
        raise RuntimeError("commit_fragments runs inside the add's atomic_write")
    ensure_held(db)
    checkpoint("fragments-commit")
    if fragments:
        dataset = lance_dataset(db.chunks)
        try:
            lance.LanceDataset.commit(
                dataset.uri,
                lance.LanceOperation.Append(list(fragments)),
                read_version=dataset.version,
                storage_options=db.location.storage_options or None,
            )
        finally:
            db.chunks.checkout_latest()  # a commit made through Lance (or perhaps made) is seen from here
        if dropped:
            db.chunks.delete(in_list("document_id", list(dropped)))
    remove_stray_fragments(db.chunks)
