"""The vector index as segments of bounded size, each an HNSW graph over a group of whole data files.

Lance builds one graph in memory, growing ~2.5 KB a row; built a group of files at a time, with the
memory of each handed back before the next, a build never holds more than one segment's graph (so
a large add's peak no longer grows with its table), and a write indexes only its new files, merged with
the few small segments before it (benchmarks/ef_real.py builds both ways, with the build's peak memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from haiku_cli.store.heap import release_freed

# The largest segment a build makes, in rows: building one adds ~80-120 MB to an add-src's peak. A
# search pays ~1 ms per segment whatever its breadth: at 100k chunks (2 segments) a vector lookup costs
# what one graph's did, at 1M (20 segments) 25.6 ms against one graph's 17.1.
SEGMENT_ROWS = 50_000
# Compaction fills data files to this share of SEGMENT_ROWS (Lance overshoots by up to a batch, and
# puts the rest of a merge in its last file), so that two of them make one segment.
FILE_SHARE = 0.45
# A segment holding fewer than this share of SEGMENT_ROWS is small: new rows are merged into the small
# segments, never into a full one, so a write's index cost follows its own rows and the small ones.
FULL_SHARE = 0.75
# Past this many small segments, the smallest are merged, each no larger than those merged so far,
# so segments grow geometrically and a row is merged O(log n) times...
MAX_SMALL_SEGMENTS = 5
# ...and once the small segments beside the largest hold this share of its rows, they are merged
# with it (within SEGMENT_ROWS), as one graph trained on all of them.
MERGE_ALL_SHARE = 0.5


@dataclass(frozen=True)
class Part:
    """A segment of the index, or a data file it does not cover yet: its files as (id, live rows)."""

    files: tuple[tuple[int, int], ...]
    indexed: bool = True

    @property
    def rows(self) -> int:
        """The live rows of its files."""
        return sum(rows for _, rows in self.files)

    @property
    def fragment_ids(self) -> list[int]:
        """Its data files' ids."""
        return [fragment for fragment, _ in self.files]


def current(dataset: Any, index: str) -> list[Part]:
    """The index's segments over the dataset's live files, then each file no segment covers."""
    live = {f.fragment_id: f.metadata.num_rows for f in dataset.get_fragments()}
    parts: list[Part] = []
    covered: set[int] = set()
    for described in dataset.describe_indices():
        if described.name != index:
            continue
        for segment in described.segments:
            ids = sorted(i for i in segment.fragment_ids if i in live)
            covered.update(ids)
            if ids:
                parts.append(Part(tuple((i, live[i]) for i in ids)))
    parts += [Part(((i, rows),), indexed=False) for i, rows in live.items() if i not in covered and rows]
    return parts


def plan(parts: Sequence[Part], *, merge_all: bool = False) -> list[list[int]]:
    """The groups of files to index as one new segment each (each replacing the segments it covers).

    New files are packed into groups of at most SEGMENT_ROWS; small segments are merged as the
    constants above say, or all of them (within SEGMENT_ROWS a group) with `merge_all`.
    """
    new = [p for p in parts if not p.indexed]
    groups = pack(new)
    small = [p for p in parts if p.indexed and not _full(p)] + [g for g in groups if not _full(g)]
    full = [g for g in groups if _full(g)]
    small.sort(key=lambda p: p.rows, reverse=True)
    beside_largest = sum(p.rows for p in small[1:])
    if len(small) > 1 and (merge_all or beside_largest >= small[0].rows * MERGE_ALL_SHARE):
        merged = pack(small)
    else:
        merged = _merged_smallest(small)
    return [g.fragment_ids for g in full + merged if not g.indexed]


def _merged_smallest(small: list[Part]) -> list[Part]:
    # Largest first: while more than MAX_SMALL_SEGMENTS remain small, the two smallest are merged with
    # each next one no larger than those merged so far (within SEGMENT_ROWS).
    small, grown = list(small), []
    while len(small) > MAX_SMALL_SEGMENTS:
        take, rows = 2, small[-1].rows + small[-2].rows
        while take < len(small) and small[-take - 1].rows <= rows <= SEGMENT_ROWS - small[-take - 1].rows:
            rows += small[-take - 1].rows
            take += 1
        merged = _joined(small[-take:])
        del small[-take:]
        if _full(merged):
            grown.append(merged)
        else:
            small = sorted([*small, merged], key=lambda p: p.rows, reverse=True)
    return grown + small


def _full(part: Part) -> bool:
    return part.rows >= SEGMENT_ROWS * FULL_SHARE


def pack(parts: Sequence[Part]) -> list[Part]:
    """The parts packed into as few groups of at most SEGMENT_ROWS rows as first-fit by size finds (a
    larger part alone); a group of one segment stays as it is (indexed), any other is to be built."""
    groups: list[list[Part]] = []
    rows: list[int] = []
    for part in sorted(parts, key=lambda p: p.rows, reverse=True):
        room = next((i for i, r in enumerate(rows) if r + part.rows <= SEGMENT_ROWS), None)
        if room is None:
            groups.append([part])
            rows.append(part.rows)
        else:
            groups[room].append(part)
            rows[room] += part.rows
    return [_joined(group) for group in groups]


def _joined(parts: Sequence[Part]) -> Part:
    if len(parts) == 1:
        return parts[0]
    return Part(tuple(f for p in parts for f in p.files), indexed=False)


def most_segments(rows: int) -> int:
    """How many segments upkeep leaves an index over `rows` rows at most (full ones, then small ones)."""
    return int(rows // (SEGMENT_ROWS * FULL_SHARE)) + 1 + MAX_SMALL_SEGMENTS


def build(dataset: Any, index: str, groups: Sequence[Sequence[int]]) -> None:
    """Index each group of files as one segment, the memory of each handed back before the next, and
    commit them together (each replacing the segments whose files it covers)."""
    if not groups:
        return
    made = []
    for group in groups:
        made.append(
            dataset.create_index_uncommitted(
                "vector",
                "IVF_HNSW_SQ",
                name=index,
                metric="cosine",
                replace=True,  # a new segment, which replaces the ones it covers at the commit
                num_partitions=1,  # the group is one graph: IVF partitions only split it further
                fragment_ids=list(group),
                m=20,  # LanceDB's defaults for IVF_HNSW_SQ, as the index was built before
                ef_construction=300,
            )
        )
        release_freed()
    dataset.commit_existing_index_segments(index, "vector", made)
