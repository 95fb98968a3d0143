"""Planning an add before anything is written: the sources listed by their kinds, the rules a source is
remembered with, the items to read and the remembered source each belongs to, and stored files that
left the folders being added. The write (ingest/pipeline.py) then runs on an engine."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from haiku_cli.errors import InputError
from haiku_cli.ingest.document import ConversionError
from haiku_cli.ingest.items import Item
from haiku_cli.ingest.kinds import kind_of
from haiku_cli.ingest.kinds.base import Contents, GoneCheck, ListRequest, Reading
from haiku_cli.ingest.remembering import remembered
from haiku_cli.ingest.reports import LeftOut, SourceOutcome
from haiku_cli.ingest.source_walk import FileChoice, SkippedSource
from haiku_cli.store.blocking import wait
from haiku_cli.store.reads import stored_uris

if TYPE_CHECKING:
    from haiku_cli.ingest.engine import Engine
    from haiku_cli.store.database import Database
    from haiku_cli.store.source_tables import RememberedSource


@dataclass
class AddPlan:
    """What an add is to do, each entry at its position among the sources given and found."""

    items: list[tuple[int, Item]] = field(default_factory=list)
    owners: dict[int, str] = field(default_factory=dict)  # position -> the remembered source of the item
    remembered: list[RememberedSource] = field(default_factory=list)
    outcomes: list[SourceOutcome] = field(default_factory=list)  # sources failed or skipped on the way
    left_out: list[LeftOut] = field(default_factory=list)  # what folders hold and is not read
    gone: list[str] = field(default_factory=list)  # stored files that left the folders being added
    _checks: list[GoneCheck] = field(default_factory=list)

    def fail(self, position: int, source: str, error: str) -> None:
        self.outcomes.append(SourceOutcome.at(position, source=source, status="failed", error=error))

    def skip(self, position: int, source: str, reason: str) -> None:
        self.outcomes.append(SourceOutcome.at(position, source=source, status="skipped", note=reason))


@dataclass(frozen=True)
class AddOptions:
    """How the sources of an add are read and remembered: --title/--meta, --follow-symlinks (None: as each
    source is remembered, else not), --include/--exclude (none given: as each source is remembered)."""

    title: str | None
    metadata: dict[str, Any]
    follow_symlinks: bool | None
    choice: FileChoice
    reading: Reading


async def plan_add(db: Database, sources: Sequence[str], options: AddOptions, lister: Engine) -> AddPlan:
    """List every source with its kind (`lister`: the engine an object-storage listing may run on)."""
    given = options.choice
    # A source added again without --include/--exclude (or --[no-]follow-symlinks) keeps what it was
    # remembered with: a file only they brought in stays (a later sync would otherwise delete it).
    before = await anyio.to_thread.run_sync(_remembered_options, db)
    kept_rules = {} if given.include or given.exclude else before.rules
    plan = AddPlan()
    positions = itertools.count()
    for source in sources:
        position = next(positions)
        kind = kind_of(source)
        key = kind.key(source)
        choice = kept_rules.get(key, given)
        follow = options.follow_symlinks
        if follow is None:
            follow = before.follows.get(key, False)
        try:
            contents = await lister.listing(kind, source, ListRequest(choice, follow, options.reading))
        except ConversionError as exc:
            plan.fail(position, kind.display(source), str(exc))
            continue
        plan.remembered.append(_remembered(source, options, contents, choice))
        if contents.itself is not None:
            plan.items.append((position, contents.itself))
            plan.owners[position] = key
        _take(plan, contents, key, positions)
        if contents.gone is not None:
            plan._checks.append(contents.gone)
    if options.title is not None and len(plan.items) > 1:
        raise InputError("--title names one document, but the sources hold several; drop --title")
    if plan._checks:
        plan.gone = await anyio.to_thread.run_sync(_gone_from, db, plan._checks)
    return plan


def _remembered(source: str, options: AddOptions, contents: Contents, choice: FileChoice) -> RememberedSource:
    return remembered(
        source,
        title=options.title,
        metadata=options.metadata,
        follow_symlinks=contents.follow_symlinks,
        choice=choice,
        kind=contents.shape,
    )


def _take(plan: AddPlan, contents: Contents, key: str, positions: Iterator[int]) -> None:
    """The entries a source holds, each at the next position: items, what is left out, what is skipped."""
    for entry in contents.entries:
        position = next(positions)
        if isinstance(entry, LeftOut):
            plan.left_out.append(entry)
        elif not isinstance(entry, SkippedSource):
            plan.items.append((position, entry))
            plan.owners[position] = key
        elif entry.failed:
            plan.fail(position, entry.source, f"{entry.source}: {entry.reason}")
        else:
            plan.skip(position, entry.source, entry.reason)


@dataclass(frozen=True)
class _Remembered:
    """What remembered sources were added with, by key: --include/--exclude rules (where any) and
    --follow-symlinks."""

    rules: dict[str, FileChoice]
    follows: dict[str, bool]


def _remembered_options(db: Database) -> _Remembered:
    from haiku_cli.store.source_tables import has_sources, read_sources

    known = read_sources(db) if has_sources(db) else []
    return _Remembered(
        rules={s.source: FileChoice(s.include, s.exclude) for s in known if s.include or s.exclude},
        follows={s.source: s.follow_symlinks for s in known},
    )


def _gone_from(db: Database, checks: list[GoneCheck]) -> list[str]:
    """The stored files, under the folders (or object-storage prefixes) being added, that no longer exist
    (a sync or delete drops them)."""
    gone = []
    for uri in wait(stored_uris(db)):
        for check in checks:
            left = check.left(uri)
            if left is not None:
                gone.append(left)
                break
    return sorted(gone)
