"""What a kind of source is to haiku: the protocol each kind implements, and the plain data it returns.

A kind (local paths, http(s) pages, objects on object storage) says which sources it reads, how one is
remembered, what a source holds, how to read one item, whether an item changed since it was stored
(`sync`'s plan, and the cheap per-hit `freshness` check), and where on this machine a source lives (for
`watch` and `doctor`). Everything above this package asks the registry (`kinds/__init__.py`) for the
kind of a source and never branches on it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from haiku_cli.store.source_state import Freshness

if TYPE_CHECKING:
    from haiku_cli.config.settings import IngestSettings
    from haiku_cli.ingest.convert.url import Validators
    from haiku_cli.ingest.document import ConvertedDocument
    from haiku_cli.ingest.objects import ObjectStores
    from haiku_cli.ingest.reports import SourceOutcome, SyncStatus
    from haiku_cli.ingest.source_walk import FileChoice
    from haiku_cli.store.source_tables import FileState, RememberedSource, SourceKind


@dataclass(frozen=True)
class Reading:
    """What reading a source needs besides itself: the `[ingest]` limits and the object-storage clients."""

    limits: IngestSettings
    objects: ObjectStores | None = None


@dataclass(frozen=True)
class ListRequest:
    """How a source given to `add-src` is to be listed: --include/--exclude and --follow-symlinks."""

    choice: FileChoice
    follow_symlinks: bool
    reading: Reading


class GoneCheck(Protocol):
    """Which stored uris under a folder-like source have left it (the report's `gone`)."""

    @property
    def prefix(self) -> str:
        """The uri prefix of what the source holds."""
        ...

    def left(self, uri: str) -> str | None:
        """The name to report for a stored uri under `prefix` that is no longer there, else None."""
        ...


@dataclass
class Contents:
    """What a source holds as `add-src` lists it.

    `entries` are the items, left-out and skipped entries in order, each at a position of its own (a
    folder's walk may be lazy); `itself`: an item read at the source's own position (a URL);
    `shape`: how the source is remembered; `gone`: how stored documents that left it are found.
    """

    shape: SourceKind
    entries: Iterable[Any] = ()
    itself: Any | None = None
    follow_symlinks: bool = False
    gone: GoneCheck | None = None


@dataclass
class SyncPlan:
    """What a sync of one source has to do, found under the lock before anything is written."""

    items: list[tuple[int, Any]] = field(default_factory=list)  # to read (new, or changed)
    gone: list[FileState] = field(default_factory=list)  # stored, no longer in the source
    refresh: list[FileState] = field(default_factory=list)  # stored for documents no longer held
    # Items whose validators say they changed but whose content is the one stored: not read, their
    # states stored anew (an object uploaded again with the same bytes)
    retimed: list[FileState] = field(default_factory=list)
    # What the plan already fetched to ask whether an item changed, by item (a URL's download)
    fetched: dict[Any, Any] = field(default_factory=dict)
    outcomes: list[SourceOutcome] = field(default_factory=list)  # failures and skips met on the way
    unchanged: int = 0
    problem: tuple[SyncStatus, str] | None = None
    # A folder's: each directory the walk listed, with its modification time just before (a file made,
    # removed or renamed in it moves that time: what `search --sync` looks at to find new files)
    listed: dict[Path, int] | None = None


class Kind(Protocol):
    """One kind of source. An implementation is one module; `kinds/__init__.py` registers it."""

    name: str
    described: str  # how the refusal of an unknown address names it ("http(s)")
    # Re-read only when a watcher polls remote sources (nothing cheap says it changed).
    polled: bool
    # Listing it is network-bound: an engine may run the listing near the data.
    listed_remotely: bool

    def claims(self, source: str) -> bool:
        """Whether a source argument (or a stored uri) is of this kind."""
        ...

    def holds(self, item: object) -> bool:
        """Whether an item of an add (as `contents` lists it) is this kind's."""
        ...

    def key(self, source: str) -> str:
        """How a source given to `add-src` is remembered."""
        ...

    def stored_uri(self, source: str) -> str:
        """The uri a document read from this source argument is stored under."""
        ...

    def display(self, source: str) -> str:
        """A source as the report names it."""
        ...

    def local_path(self, key: str) -> Path | None:
        """Where a remembered source lives on this machine (watched, checked by `doctor`), or None."""
        ...

    def absent(self, source: str) -> str | None:
        """Why a source given to `add-src` cannot be added at all, checked before a database opens."""
        ...

    def contents(self, source: str, request: ListRequest) -> Contents:
        """What the source holds (a ConversionError when it cannot be listed at all)."""
        ...

    def label(self, item: Any) -> str:
        """How an item is named in the report and the progress line."""
        ...

    def uri(self, item: Any) -> str:
        """The uri an item's document is stored under."""
        ...

    def size(self, item: Any) -> int:
        """An item's bytes as listed (0 when not known before it is read)."""
        ...

    def read(self, item: Any, reading: Reading, fetched: Any | None = None) -> tuple[Seen, ConvertedDocument]:
        """Read and convert one item; how it looked when read, and its document. `fetched`: what a sync's
        plan got already for it. An unreadable item raises an input error."""
        ...

    def plan_sync(
        self,
        source: RememberedSource,
        states: dict[str, FileState],
        scope: Sequence[Path] | None,
        reading: Reading,
        plan: SyncPlan,
    ) -> SyncPlan:
        """Fill in a sync's plan: which stored items changed, which are new, which left (`states`: the
        stored states of the documents still held, by uri)."""
        ...

    def freshness(
        self, state: FileState, content_hash: str | None = None, limits: IngestSettings | None = None
    ) -> Freshness:
        """Whether a stored item changed since it was read: a cheap local look (size and time; the content
        hash, when given and those moved), or UNKNOWN when only the network could say."""
        ...

    def asked_freshness(
        self, state: FileState, reading: Reading, timeout: float
    ) -> tuple[Freshness, str | None]:
        """`--check-remote`: whether a stored item changed, asked of its server or store with the stored
        validators (one request, bounded by `timeout`), and why when it could not be said; a kind with
        nothing to ask answers as `freshness` does."""
        ...


class RemoteKind:
    """What the kinds named by an address elsewhere (a URL, an object) share: the address is the source,
    its key and its stored uri; nothing of it lives on this machine, and only a request to its server
    or store could say whether an item changed (`asked_freshness`)."""

    def key(self, source: str) -> str:
        return source

    def stored_uri(self, source: str) -> str:
        return source

    def display(self, source: str) -> str:
        return source

    def local_path(self, key: str) -> Path | None:
        return None

    def absent(self, source: str) -> str | None:
        return None  # asked over the network when it is listed or read

    def freshness(
        self, state: FileState, content_hash: str | None = None, limits: IngestSettings | None = None
    ) -> Freshness:
        return Freshness.UNKNOWN


@dataclass(frozen=True, slots=True)  # a large add holds one per file
class Seen:
    """A file's size and modification time, or a URL's or object's validators, taken before it was read."""

    uri: str
    size: int | None = None
    mtime_ns: int | None = None
    validators: Validators | None = None

    @classmethod
    def file(cls, path: Path, stat: os.stat_result) -> Seen:
        """A file as `stat` found it."""
        from haiku_cli.ingest.convert.dispatch import file_uri

        return cls(file_uri(path), stat.st_size, stat.st_mtime_ns)
