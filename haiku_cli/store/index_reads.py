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

# The analyzer `create_fts_index` gives every full-text index haiku makes, as options of LanceDB's own
# `tokenize`, which analyses in the calling thread. Asking the index instead is an async call that
# rebuilds its analyzer from the index's settings, read from the store, each time: about five times the
# CPU of analysing a query here (a tenth of a millisecond, per search), and on object storage a round trip.
HAIKU_ANALYZER = {"language": "English", "stem": True, "remove_stop_words": True, "ascii_folding": True}
# Text each of the analyzer's settings changes the terms of (stemming, stop words, folding, case,
# the longest token, the base tokenizer, the language): an index analysing it as `HAIKU_ANALYZER`
# does was made with that analyzer.
_PROBE = "The Running CAFÉ children's foo_bar résumé " + "x" * 41 + " 42 Über"
_LOCAL = "fts_analyzer_as_haiku"  # a handle's memo: whether its index analyses as HAIKU_ANALYZER


def analyze_locally(texts: Sequence[str]) -> list[list[str]]:
    """Each text's terms under `HAIKU_ANALYZER`, in this thread (see `analyzes_as_haiku`)."""
    from lancedb import tokenize

    def tokens(text: str) -> list[str]:
        return list(map(_TEXT, tokenize(text, **HAIKU_ANALYZER)))  # type: ignore[arg-type]

    joined = _joined(texts)
    if joined is not None and (split := _split(tokens(joined), len(texts))) is not None:
        return split
    return [tokens(t) for t in texts]


async def analyzes_as_haiku(db: Database) -> bool:
    """Whether `db`'s full-text index analyses as `HAIKU_ANALYZER` (asked once per handle: an index
    made by another program, or with other settings, is asked itself each time)."""
    known: bool | None = db.read_memo.get(_LOCAL)
    if known is None:
        try:
            by_index = list(map(_TEXT, await async_table(db.chunks).tokenize(_PROBE, index_name=FTS_INDEX)))
        except Exception:
            return False  # no index, or its settings unreadable: asking the index says what is wrong
        known = db.read_memo[_LOCAL] = by_index == analyze_locally([_PROBE])[0]
    return known


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
