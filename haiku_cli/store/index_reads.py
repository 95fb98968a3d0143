"""What a reader asks of a chunks table's indexes: their names, their state, and the full-text analyzer.

Kept apart from indexes.py, which builds and maintains them, so a search loads none of that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING

from haiku_cli.store.handle import Database
from haiku_cli.store.reads import async_table

if TYPE_CHECKING:
    from lancedb.table import Table

FTS_INDEX = "text_idx"
VECTOR_INDEX = "vector_idx"


@dataclass(frozen=True)
class IndexState:
    """One index as `info` reports it."""

    name: str
    kind: str
    indexed_rows: int
    unindexed_rows: int
    segments: int = 1


# Analyzing costs about a millisecond per call whatever the length, so many texts go in one call,
# joined by a word no text holds and the analyzer keeps as it is.
_SEPARATOR = "zzhaikutextbreakzz"


async def analyze(chunks: Table, texts: Sequence[str]) -> list[list[str]]:
    """The terms the full-text index makes of each text (lower-cased, stemmed, stop words dropped), in one
    call to its analyzer: what a write counts as each chunk's length and a search rescores BM25 with."""
    table = async_table(chunks)

    async def tokens(text: str) -> list[str]:
        return list(map(_TEXT, await table.tokenize(text, index_name=FTS_INDEX)))

    joined = _joined(texts)
    if joined is not None and (split := _split(await tokens(joined), len(texts))) is not None:
        return split
    return list(await asyncio.gather(*(tokens(t) for t in texts)))


_TEXT = attrgetter("text")


def _joined(texts: Sequence[str]) -> str | None:
    if len(texts) < 2:
        return None
    joined = f" {_SEPARATOR} ".join(texts)
    # The separator within a text would cut it in two (and the analyzer folds case, so any case).
    if joined.lower().count(_SEPARATOR) != len(texts) - 1:
        return None
    return joined


def _split(terms: list[str], count: int) -> list[list[str]] | None:
    # Cut at each separator by list.index, which scans in C: a search analyses thousands of terms.
    out: list[list[str]] = []
    start = 0
    while True:
        try:
            end = terms.index(_SEPARATOR, start)
        except ValueError:
            out.append(terms[start:])
            return out if len(out) == count else None
        out.append(terms[start:end])
        start = end + 1


def has_vector_index(db: Database) -> bool:
    """Whether searches go through an ANN index (and so want refinement)."""
    return any(i.name == VECTOR_INDEX for i in db.chunks.list_indices())


async def index_states(chunks: Table) -> list[IndexState]:
    """Each index on a chunks table with how many rows it covers."""
    table = async_table(chunks)
    listed = await table.list_indices()
    stats = await asyncio.gather(*(table.index_stats(idx.name) for idx in listed))
    return [
        IndexState(
            name=idx.name,
            kind=str(idx.index_type),
            indexed_rows=found.num_indexed_rows if found else 0,
            unindexed_rows=found.num_unindexed_rows if found else 0,
            segments=(found.num_indices or 1) if found else 0,
        )
        for idx, found in zip(listed, stats, strict=True)
    ]
