"""What an add reports: each source's outcome, the whole report, and where long work shows progress."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field, PrivateAttr

# "skipped": left out on purpose (a symlink out of the folder); "failed": could not be read or converted.
Status = Literal["added", "updated", "unchanged", "skipped", "failed"]


class Progress(Protocol):
    """Where long work reports how far it got (a rich bar on a terminal, nothing when piped)."""

    def add_total(self, chunks: int) -> None: ...
    def advance(self, chunks: int) -> None: ...


class NoProgress:
    """Progress shown nowhere: what long work reports to when its caller passed no `Progress`."""

    def add_total(self, chunks: int) -> None:
        pass

    def advance(self, chunks: int) -> None:
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

    @classmethod
    def at(cls, position: int, **fields: Any) -> SourceOutcome:
        """The outcome of the source at `position` among those given and found."""
        outcome = cls(**fields)
        outcome._position = position
        return outcome


class IngestReport(BaseModel):
    """The outcome of every source of one add, in the database it went to."""

    database: str = ""
    outcomes: list[SourceOutcome] = Field(default_factory=list)

    @property
    def failed(self) -> list[SourceOutcome]:
        """The sources that could not be added."""
        return [o for o in self.outcomes if o.status == "failed"]

    def in_source_order(self) -> IngestReport:
        """The report with its outcomes in the order the sources were given and found."""
        self.outcomes.sort(key=lambda o: o._position)  # stable: a source's own outcomes keep theirs
        return self
