"""What an add reports: each source's outcome, the whole report, and where long work shows progress."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field, PrivateAttr

from haiku_cli.store.source_tables import SourceKind

# "skipped": left out on purpose (a symlink out of the folder); "failed": could not be read or converted;
# "deleted": `sync` removed the document of a file that left its source.
Status = Literal["added", "updated", "unchanged", "skipped", "failed", "deleted"]


class Progress(Protocol):
    """Where long work reports how far it got (a rich bar on a terminal, nothing when piped).

    Chunks are counted as they are queued (`add_total`) and embedded (`advance`); an add also says how
    many files it will read (`add_files`, once they are all found), which one it reads (`reading`), when
    each is read (`file_done`), and a long step of the index upkeep after it (`upkeep`: the first build
    of the vector index, minutes for a large add).
    """

    def add_total(self, chunks: int) -> None: ...
    def advance(self, chunks: int) -> None: ...
    def add_files(self, count: int) -> None: ...
    def reading(self, source: str) -> None: ...
    def file_done(self) -> None: ...
    def upkeep(self, step: str) -> None: ...


class NoProgress:
    """Progress shown nowhere: what long work reports to when its caller passed no `Progress`."""

    def add_total(self, chunks: int) -> None:
        pass

    def advance(self, chunks: int) -> None:
        pass

    def add_files(self, count: int) -> None:
        pass

    def reading(self, source: str) -> None:
        pass

    def file_done(self) -> None:
        pass

    def upkeep(self, step: str) -> None:
        pass


class SourceOutcome(BaseModel):
    """What happened to one source."""

    source: str
    status: Status
    document_id: str | None = None
    chunks: int = 0
    error: str | None = None
    note: str | None = None  # read, but with something worth knowing (e.g. not UTF-8)
    # "updated": how many of its chunks came out identical and kept their ids (None for the other statuses)
    kept_chunk_ids: int | None = None
    # Where the source was given or found: batches report out of that order, the report is put back in it.
    _position: int = PrivateAttr(default=0)
    # A document read out of the source's (a mail's attachment): it does not stand for the source's file.
    _part: bool = PrivateAttr(default=False)

    @classmethod
    def at(cls, position: int, *, part: bool = False, **fields: Any) -> SourceOutcome:
        """The outcome of the source at `position` among those given and found (`part`: of a document
        read out of that source's, which shares its position)."""
        outcome = cls(**fields)
        outcome._position = position
        outcome._part = part
        return outcome

    @property
    def part(self) -> bool:
        """Whether this is the outcome of a document read out of the source's own (an attachment)."""
        return self._part

    @property
    def position(self) -> int:
        """Where the source was given or found among those of its add."""
        return self._position


class LeftOut(BaseModel):
    """A file or folder met in a folder being added and left out on purpose, and why.

    `why` is "unsupported" (`detail`: its suffix), "ignored" (`detail`: `IGNORE_FILE: PATTERN`) or
    "excluded" (`detail`: the `--exclude` pattern, or `--include` when it matched none of those).
    """

    source: str
    why: Literal["unsupported", "ignored", "excluded"]
    detail: str


class IngestReport(BaseModel):
    """The outcome of every source of one add, in the database it went to.

    `left_out` lists what the folders held that was not read; `gone` the stored documents whose files
    left the folders added (they stay stored until a sync or a delete).
    """

    database: str = ""
    outcomes: list[SourceOutcome] = Field(default_factory=list)
    left_out: list[LeftOut] = Field(default_factory=list)
    gone: list[str] = Field(default_factory=list)

    @property
    def failed(self) -> list[SourceOutcome]:
        """The sources that could not be added."""
        return [o for o in self.outcomes if o.status == "failed"]

    def in_source_order(self) -> IngestReport:
        """The report with its outcomes in the order the sources were given and found."""
        self.outcomes.sort(key=lambda o: o._position)  # stable: a source's own outcomes keep theirs
        return self


SyncStatus = Literal["synced", "missing", "unreadable"]


class SourceSync(BaseModel):
    """What a sync did to one remembered source: counts, and each change or failure."""

    source: str
    kind: SourceKind
    # "missing" / "unreadable": the source itself could not be read; its documents were kept.
    status: SyncStatus = "synced"
    error: str | None = None
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: int = 0
    failed: int = 0
    changes: list[SourceOutcome] = Field(default_factory=list)  # every outcome but "unchanged"

    def count(self, outcomes: Sequence[SourceOutcome]) -> None:
        """Add outcomes to the counts; all but the unchanged ones are listed too."""
        for outcome in outcomes:
            setattr(self, outcome.status, getattr(self, outcome.status) + 1)
            if outcome.status != "unchanged":
                self.changes.append(outcome)


class SyncReport(BaseModel):
    """What `haiku sync` did to one database, source by source."""

    database: str
    sources: list[SourceSync] = Field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether some item, or some source as a whole, could not be read."""
        return any(s.failed or s.status != "synced" for s in self.sources)
