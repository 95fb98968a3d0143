"""Where an add's items are read, chunked and embedded: the engine interface, and the in-process engine.

The planner (ingest/planning.py) decides what to read; an engine reads it and hands each document to the
`Ingestor`, which writes. `InProcess` does it all here; `RayEngine` (ingest/cluster.py) has a cluster's
workers read, chunk and embed, and writes new documents' chunks as fragments committed at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import anyio.to_thread

from haiku_cli.errors import HaikuError, InputError
from haiku_cli.ingest.items import Item, item_label
from haiku_cli.ingest.kinds import read_item

if TYPE_CHECKING:
    from haiku_cli.ingest.document import ConvertedDocument
    from haiku_cli.ingest.ingestor import Ingestor
    from haiku_cli.ingest.kinds.base import Contents, Kind, ListRequest, Reading
    from haiku_cli.ingest.remembering import Seen


class Engine(Protocol):
    """Reads, chunks and embeds an add's items for its `Ingestor`, inside the caller's write."""

    @property
    def fragments(self) -> bool:
        """Whether new documents' chunks are written as fragments, committed at the end of the write."""
        ...

    def worth_it(self, items: Sequence[tuple[int, Item]]) -> bool:
        """Whether the items are worth this engine (else the add runs in process)."""
        ...

    async def listing(self, kind: Kind, source: str, request: ListRequest) -> Contents:
        """What a source holds, listed where this engine lists it."""
        ...

    async def write(
        self,
        ingestor: Ingestor,
        items: Sequence[tuple[int, Item]],
        *,
        title: str | None,
        metadata: dict[str, Any],
        reading: Reading,
        fetched: dict[Any, Any] | None = None,
    ) -> dict[int, Seen]:
        """Hand every item, read and converted, to the ingestor in order, and have it write them all;
        how each item looked when read. `fetched`: what a sync's plan got already, by item."""
        ...


class InProcess:
    """Reads each item in a thread of this process and hands it on as the writer's stages run beside it."""

    fragments = False

    def worth_it(self, items: Sequence[tuple[int, Item]]) -> bool:
        return True

    async def listing(self, kind: Kind, source: str, request: ListRequest) -> Contents:
        return await anyio.to_thread.run_sync(kind.contents, source, request)

    async def write(
        self,
        ingestor: Ingestor,
        items: Sequence[tuple[int, Item]],
        *,
        title: str | None,
        metadata: dict[str, Any],
        reading: Reading,
        fetched: dict[Any, Any] | None = None,
    ) -> dict[int, Seen]:
        seen: dict[int, Seen] = {}
        ingestor.held.bound(reading.limits.commit_chunks, reading.limits.commit_seconds)
        ingestor.progress.add_files(len(items))  # all found before any is read: the total does not grow
        async with ingestor.pipelined():
            await _convert_all(ingestor, items, title, metadata, reading, seen, fetched or {})
        return seen


def engine_for(engine: Engine | None, items: Sequence[tuple[int, Item]]) -> Engine:
    """The engine an add's write runs on: the one asked for when the items are worth it, else this process."""
    if engine is not None and engine.worth_it(items):
        return engine
    return InProcess()


async def _convert_all(
    ingestor: Ingestor,
    items: Sequence[tuple[int, Item]],
    title: str | None,
    metadata: dict[str, Any],
    reading: Reading,
    seen: dict[int, Seen],
    fetched: dict[Any, Any],
) -> None:
    """Convert and queue each source in order; unreadable ones are reported, other failures raised.

    A file's size and time are taken before it is read, so a change while it is read shows next time.
    """
    for position, item in items:
        ingestor.position = position
        label = item_label(item)
        ingestor.progress.reading(label)
        try:
            got = fetched.get(item)
            # A long step inside one file (OCR of a page) shows beside its name.
            step = partial(_show_step, ingestor.progress, label)
            reads = partial(read_showing_steps, item, reading, got, step)
            looked, doc = await anyio.to_thread.run_sync(reads)
            seen[position] = looked
            await ingestor.add(doc, source=label, title=title, metadata=metadata)
        except HaikuError as exc:
            if exc.exit_code != InputError.exit_code:
                raise  # a model or database failure stops the add, and undoes it
            ingestor.fail(label, str(exc))
        finally:
            ingestor.progress.file_done()


def _show_step(progress: Any, label: str, step: str) -> None:
    progress.reading(f"{label} ({step})")


def read_showing_steps(
    item: Item, reading: Reading, fetched: Any, on_step: Callable[[str], None]
) -> tuple[Seen, ConvertedDocument]:
    """Read one item, telling `on_step` of the long steps within it (an OCR page)."""
    from haiku_cli.ingest.convert.ocr import progress_to

    with progress_to(on_step):
        return read_item(item, reading, fetched)
