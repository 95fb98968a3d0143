"""What flows through an add between the engines and the writer: the items read, and items prepared by a
cluster's worker (shared by ingest/ingestor.py, ingest/engine.py and ingest/cluster*.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from haiku_cli.ingest.kinds import Item, item_kind

if TYPE_CHECKING:
    import numpy as np

    from haiku_cli.errors import HaikuError
    from haiku_cli.ingest.chunking import Chunk
    from haiku_cli.ingest.document import ConvertedDocument
    from haiku_cli.ingest.remembering import Seen

__all__ = ["Item", "Prepared", "item_label"]


@dataclass(frozen=True)
class Prepared:
    """One item read, and (unless its content is stored already) chunked and embedded, by a cluster's
    worker; `error` when it could not be read (an input error is reported, any other stops the add)."""

    position: int
    label: str
    seen: Seen | None = None
    document: ConvertedDocument | None = None
    chunks: list[Chunk] | None = None  # None: left to the writer (its content hash was stored already)
    vectors: np.ndarray | None = None  # one per chunk, of its `embedding_text` under `title`
    title: str | None = None  # the document title the vectors were made with
    error: HaikuError | None = None
    # A new document whose chunks the worker wrote as fragments: the id their rows carry, and how many.
    document_id: str | None = None
    written: int = 0
    # The documents read out of `document` (its `children`: a mail's attachments), prepared alike, in order.
    parts: tuple[Prepared, ...] = ()


def item_label(item: Item) -> str:
    """How an item is named in the report and the progress line."""
    return item_kind(item).label(item)
