"""Adding to one database: plan the add (ingest/planning.py), then write it on an engine
(ingest/engine.py) through the `Ingestor`, all in one all-or-nothing write; then bring indexes up to date."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from haiku_cli.config.settings import IngestSettings
from haiku_cli.errors import InputError
from haiku_cli.ingest.engine import Engine, InProcess, engine_for
from haiku_cli.ingest.ingestor import Ingestor
from haiku_cli.ingest.kinds.base import Reading
from haiku_cli.ingest.planning import AddOptions, AddPlan, plan_add
from haiku_cli.ingest.reports import IngestReport, Progress
from haiku_cli.ingest.shown import drop_shown_pictures
from haiku_cli.ingest.source_walk import FileChoice
from haiku_cli.store.database import Database
from haiku_cli.store.indexes import vector_rows_to_index
from haiku_cli.store.maintenance import after_write
from haiku_cli.store.transaction import atomic_write, storage_errors

if TYPE_CHECKING:
    from haiku_cli.embed import Embedder
    from haiku_cli.ingest.objects import ObjectStores
    from haiku_cli.ingest.remembering import Seen
    from haiku_cli.ingest.reports import SourceOutcome
    from haiku_cli.store.source_tables import RememberedSource

__all__ = ["Ingestor", "add_sources", "add_text", "remember_outcomes"]


async def add_text(
    db: Database, embedder: Embedder, text: str, *, title: str | None, metadata: dict[str, Any]
) -> IngestReport:
    """Add a piece of text as a document."""
    from haiku_cli.ingest.convert import convert_text

    if not text.strip():
        raise InputError("the text to add is empty")
    ingestor = Ingestor(db, embedder)
    with atomic_write(db):
        await ingestor.add(convert_text(text, title=title), source="<text>", title=title, metadata=metadata)
        await ingestor.flush()
    await anyio.to_thread.run_sync(after_write, db)
    return ingestor.report


async def add_sources(
    db: Database,
    embedder: Embedder,
    sources: Sequence[str],
    *,
    title: str | None,
    metadata: dict[str, Any],
    progress: Progress | None = None,
    follow_symlinks: bool | None = None,
    limits: IngestSettings | None = None,
    choice: FileChoice | None = None,
    objects: ObjectStores | None = None,
    engine: Engine | None = None,
) -> IngestReport:
    """Add files, directories (recursively), URLs and objects or prefixes on object storage (`objects`
    reads those); unreadable sources are reported, the rest added. With an `engine` (a cluster), it reads,
    chunks and embeds them (unless they are too few to be worth it), and this process writes.

    Symlinks leading out of a directory are skipped unless `follow_symlinks` (None: as the source is
    remembered, else skipped); files over `limits` are reported as failed; `choice` (--include/--exclude)
    picks the files of folders (without it, a source added again keeps the rules it is remembered with).
    What folders hold and is not read, and stored files that left them, are listed in the report. Each
    source found is remembered with these options (`sync` reads it again). The whole add is one
    all-or-nothing write: a model or database failure, Ctrl-C or a kill leaves the database as it was
    before the command.
    """
    from haiku_cli.store.source_tables import prepare

    reading = Reading(limits or IngestSettings(), objects)
    options = AddOptions(title, metadata, follow_symlinks, choice or FileChoice(), reading)
    plan = await plan_add(db, sources, options, engine or InProcess())
    ingestor = Ingestor(db, embedder, progress)
    _reported(ingestor.report, plan)
    await anyio.to_thread.run_sync(prepare, db)  # before the journal: the write below may fill them
    chosen = engine_for(engine, plan.items)
    with atomic_write(db, fragments=chosen.fragments):
        seen = await chosen.write(ingestor, plan.items, title=title, metadata=metadata, reading=reading)
        await anyio.to_thread.run_sync(
            lambda: remember_outcomes(db, plan.remembered, ingestor.report.outcomes, plan.owners, seen)
        )
    await _upkeep(db, ingestor)
    return ingestor.report.in_source_order()


def _reported(report: IngestReport, plan: AddPlan) -> None:
    """What the plan met on its way into the report: failed and skipped sources, left-out and gone files."""
    report.outcomes.extend(plan.outcomes)
    report.left_out.extend(plan.left_out)
    report.gone = plan.gone


async def _upkeep(db: Database, ingestor: Ingestor) -> None:
    """After the write: the vector index brought up to date, pictures no document shows dropped."""
    rows, first = await anyio.to_thread.run_sync(vector_rows_to_index, db.chunks)
    if rows and first:
        ingestor.progress.upkeep(f"building the vector index over {rows:,} chunks (once)")
    elif rows:
        ingestor.progress.upkeep(f"indexing the vectors of {rows:,} new chunks")
    await anyio.to_thread.run_sync(after_write, db)
    await anyio.to_thread.run_sync(drop_shown_pictures, db, ingestor.report)


def remember_outcomes(
    db: Database,
    sources: Sequence[RememberedSource],
    outcomes: Sequence[SourceOutcome],
    owners: dict[int, str],
    seen: dict[int, Seen],
) -> None:
    """Store the sources and the file states an add leaves (inside its write, so they agree with it)."""
    from haiku_cli.ingest.remembering import states_of
    from haiku_cli.store.source_tables import put_file_states, remember

    with storage_errors(db, "cannot be written"):
        remember(db, sources)
        put_file_states(db, states_of(outcomes, owners, seen))
