"""Keeping the full-text index current and adding a vector index once the table is large enough."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from haiku_cli.store import vector_segments
from haiku_cli.store.blocking import wait
from haiku_cli.store.heap import release_freed
from haiku_cli.store.index_reads import FTS_INDEX as FTS_INDEX
from haiku_cli.store.index_reads import HAIKU_ANALYZER
from haiku_cli.store.index_reads import VECTOR_INDEX as VECTOR_INDEX
from haiku_cli.store.index_reads import IndexState as IndexState
from haiku_cli.store.index_reads import analyze as analyze
from haiku_cli.store.index_reads import has_vector_index as has_vector_index
from haiku_cli.store.index_reads import index_states as index_states
from haiku_cli.store.vector_segments import build, current, pack, plan

if TYPE_CHECKING:
    from lancedb.table import Table

# From this many chunks on, vector search goes through an IVF_HNSW_SQ index. Measured on 384-dim
# vectors (benchmarks/index_upkeep.py threshold): the index pays from ~5k chunks and at 10k halves a
# vector query's CPU (15.7 -> 7.1 ms; hybrid 20.8 -> 14.0 ms) at recall@10 0.98, for a 5 s build paid
# once by the write that crosses it; at 25k an exact scan cost 46 ms against 14 ms. Below 10k the scan
# is exact and within a few ms of the index, and small databases keep no index to build or maintain.
VECTOR_INDEX_MIN_ROWS = 10_000
# Each write after an index exists adds a delta segment that every query then searches too (at 110k
# chunks, 171 vector segments made vector search 2x slower). Past this many deltas beside the base,
# the newest are merged among themselves (cost proportional to their rows, not the table's)...
MAX_INDEX_DELTAS = 4
# ...and once the deltas hold this share of the base's rows, the whole index is rebuilt as one.
REBUILD_DELTA_SHARE = 0.5
# A write adds a data file; once a table has more than this many, they are compacted into few.
MAX_FRAGMENTS = 16
# Without Lance's per-segment merge (pylance missing), past this many segments the index is rebuilt.
MAX_VECTOR_SEGMENTS = 8
# Columns filtered by exact value (get_documents, find_by_uri and, for uri-less text, find_by_hash
# during ingest, chunks of a document): without an index each lookup reads the whole column.
CHUNK_KEYS = ("id", "document_id")
DOCUMENT_KEYS = ("id", "uri", "content_hash")


def create_fts_index(chunks: Table, *, replace: bool = False) -> None:
    """The full-text index, made with the (empty) table so its analyzer can count tokens from the start."""
    # English stemming and stop words: BM25 over raw surface forms ranks noticeably worse.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sync wrapper is deprecated, not the index kind
        chunks.create_fts_index(
            "search_text",
            **HAIKU_ANALYZER,  # type: ignore[arg-type]
            with_position=False,
            name=FTS_INDEX,
            replace=replace,
        )


class LanceHandle:
    """A table with its Lance dataset (pylance), opened once per upkeep and reopened only after a commit
    made through LanceDB: each opening reads the manifest again and starts with cold index caches (5 ms
    of CPU at 100k chunks), and one write's upkeep asks for the dataset about a dozen times."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self._dataset: Any = None

    def dataset(self) -> Any:
        """The dataset at the table's version (None without pylance)."""
        if self._dataset is None or getattr(self._dataset, "version", None) != self.table.version:
            self._dataset = lance_dataset(self.table)
        return self._dataset

    def committed(self) -> None:
        """After a commit (or a failed one) through the dataset: the table handle moves to the latest."""
        self.table.checkout_latest()  # a commit made through Lance is not seen by this handle until then


def refresh_indexes(chunks: Table, *, merge_all: bool = False) -> None:
    """Fold newly written rows into the indexes, add missing ones, and merge piled-up delta segments.

    With `merge_all` every index is rebuilt as one segment whatever its count (what `vacuum` does).
    """
    rows = chunks.count_rows()
    if rows == 0:
        return
    lance = LanceHandle(chunks)
    had_text = FTS_INDEX in {i.name for i in chunks.list_indices()}
    if not had_text:
        create_fts_index(chunks)
    # Only once Lance folded the rows: LanceDB's optimize (its fallback) merges text segments and
    # compacts files itself. Files are compacted after the text segments are merged, as Lance merges
    # only files that the same segments cover.
    if _refresh_keys(lance, CHUNK_KEYS, merge_all=merge_all):
        if had_text and lance.dataset() is not None:
            _bound_text_segments(lance, merge_all=merge_all)
        release_freed()  # each step's buffers go before the next step's come (store/heap.py)
        _compact_if_fragmented(lance)
    release_freed()
    _refresh_vector_index(lance, rows, merge_all=merge_all)


def _refresh_vector_index(lance: LanceHandle, rows: int, *, merge_all: bool) -> None:
    vector = _vector_state(lance.table)
    if vector is None and rows < VECTOR_INDEX_MIN_ROWS:
        return
    if _segmented(lance, merge_all=merge_all):
        return
    # No pylance, or it refused: LanceDB's own rules, one graph over the whole table.
    if vector is None:
        _create_whole_vector_index(lance.table)
        return
    if vector.unindexed_rows and not _merged_newest(lance, [VECTOR_INDEX], 0):
        lance.table.optimize()
    vector = _vector_state(lance.table)
    if vector is not None and vector.segments > 1:
        _bound_vector_segments(lance, vector.segments, merge_all=merge_all)


def _vector_state(chunks: Table) -> IndexState | None:
    return next((s for s in wait(index_states(chunks)) if s.name == VECTOR_INDEX), None)


def _segmented(lance: LanceHandle, *, merge_all: bool = False, whole: bool = False) -> bool:
    """Index the rows the vector index lacks and merge its small segments, a bounded group of files at
    a time (store/vector_segments.py); with `whole`, rebuild every segment. False if Lance could not."""
    try:
        dataset = lance.dataset()
        if dataset is None:
            return False
        parts = current(dataset, VECTOR_INDEX)
        if whole:
            groups = [p.fragment_ids for p in pack([replace(p, indexed=False) for p in parts])]
        else:
            groups = plan(parts, merge_all=merge_all)
        build(dataset, VECTOR_INDEX, groups)
    except Exception:  # pylance disagreeing with LanceDB on the files: the write's rows are stored
        return False
    finally:
        lance.committed()
    return True


def _bound_text_segments(lance: LanceHandle, *, merge_all: bool) -> None:
    # LanceDB's optimize folds new rows into the full-text index by rewriting all of it, a cost per
    # write growing with the table. Indexed as a segment of their own they cost only their rows, and
    # BM25 over several segments scores exactly as over one (it takes its statistics from the whole
    # index); the segments are then bounded as the vector index's are (benchmarks/index_upkeep.py).
    sizes = _segment_rows(lance, FTS_INDEX)
    if sizes is None:  # a Lance that does not report segment sizes: merge all of them, as LanceDB did
        stats = lance.table.index_stats(FTS_INDEX)
        merge = (stats.num_indices or 1) if stats else 1
    else:
        merge = _segments_to_merge(sizes, merge_all=merge_all)
    if merge and not _merged_newest(lance, [FTS_INDEX], merge):
        create_fts_index(lance.table, replace=True)  # a Lance that folds but cannot merge: keep them bounded


def _bound_vector_segments(lance: LanceHandle, segments: int, *, merge_all: bool) -> None:
    # Each segment is one more HNSW graph every query searches, so their number is bounded; but
    # rebuilding the whole graph costs time proportional to the table (83 s of CPU at 100k), so a
    # write only merges the small segments written since the last rebuild, and rebuilds the whole
    # index only once those hold REBUILD_DELTA_SHARE of its rows: paid once per such growth.
    sizes = _segment_rows(lance, VECTOR_INDEX)
    if sizes is not None:
        merge = _segments_to_merge(sizes, merge_all=merge_all)
        if merge == len(sizes):
            _create_whole_vector_index(lance.table)  # retrained on every row, not only merged
            return
        if merge == 0 or _merged_newest(lance, [VECTOR_INDEX], merge):
            return
    # No per-segment control (or it failed): rebuild past a count, as LanceDB alone can.
    if merge_all or segments > MAX_VECTOR_SEGMENTS:
        _create_whole_vector_index(lance.table)


def _segments_to_merge(sizes: Sequence[int], *, merge_all: bool) -> int:
    """How many of an index's newest segments (rows in each, the base first) to merge: every one once
    the deltas hold REBUILD_DELTA_SHARE of the base, some once there are more than MAX_INDEX_DELTAS."""
    base, deltas = sizes[0], sizes[1:]
    if not deltas:
        return 0
    if merge_all or sum(deltas) >= base * REBUILD_DELTA_SHARE:
        return len(sizes)
    return _deltas_to_merge(deltas) if len(deltas) > MAX_INDEX_DELTAS else 0


def _deltas_to_merge(deltas: Sequence[int]) -> int:
    """How many of the newest delta segments to merge: the two newest, and each older one no larger than
    those merged so far, so segments grow geometrically and a row is re-merged O(log n) times."""
    take, total = 2, deltas[-1] + deltas[-2]
    while take < len(deltas) and deltas[-take - 1] <= total:
        total += deltas[-take - 1]
        take += 1
    return take


def segment_rows(chunks: Table, index: str) -> list[int] | None:
    """Rows in each segment of an index, oldest (the base) first; None if Lance cannot say."""
    return _segment_rows(LanceHandle(chunks), index)


def _segment_rows(lance: LanceHandle, index: str) -> list[int] | None:
    try:
        dataset = lance.dataset()
        if dataset is None:
            return None
        stats = dataset.stats.index_stats(index)
        segments = stats["indices"]
        if all("num_docs" in seg or "partitions" in seg for seg in segments):
            return [_rows_of(seg) for seg in segments]
        # A B-tree's segments say only their key range; the statistics count the rows of each.
        sizes = [int(n) for n in stats["num_indexed_rows_per_delta"]]
        return sizes if len(sizes) == len(segments) else None
    except Exception:  # a Lance release that reports otherwise: fall back to counting segments
        return None


def _rows_of(segment: dict) -> int:
    if "num_docs" in segment:  # full text
        return int(segment["num_docs"])
    return sum(p["size"] for p in segment["partitions"])  # vector: rows per IVF partition


def _merged_newest(lance: LanceHandle, names: Sequence[str], count: int) -> bool:
    """Merge the `count` newest segments of each named index through Lance, in one commit (0: index the
    rows each lacks as a segment of their own); False if Lance could not.

    pylance is a second copy of the engine beside LanceDB's own: should the two releases ever disagree
    on the files, the write that is being indexed must not fail for it (its rows are already stored),
    so upkeep falls back to LanceDB's own rules instead.
    """
    try:
        dataset = lance.dataset()
        if dataset is None:
            return False
        dataset.optimize.optimize_indices(index_names=list(names), num_indices_to_merge=count)
    except Exception:
        return False
    finally:
        lance.committed()
    return True


def lance_dataset(chunks: Table) -> Any:
    """The table as Lance's own dataset (pylance), or None without it.

    Merging some delta segments and not others, or indexing without compacting, is only in Lance's own
    Python API, which LanceDB uses for the same files; LanceDB's `optimize` does all of it or none.
    """
    # Lance's own logging (set up at its import) stays off the user's terminal as LanceDB's does; and
    # segment sizes come from index statistics, which would otherwise carry every IVF centroid and
    # warn about it at each write.
    os.environ.setdefault("LANCE_LOG", "error")
    os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
    try:
        import lance  # noqa: F401
    except ImportError:
        return None
    return chunks.to_lance()


def vector_rows_to_index(chunks: Table) -> tuple[int, bool]:
    """How many rows the next upkeep adds to the vector index when that takes long enough to show (0:
    not), and whether it builds the index first. Indexing costs about a second per thousand chunks."""
    vector = _vector_state(chunks)
    if vector is None:
        rows = chunks.count_rows()
        return (rows, True) if rows >= VECTOR_INDEX_MIN_ROWS else (0, False)
    rows = vector.unindexed_rows
    return (rows, False) if rows >= VECTOR_INDEX_MIN_ROWS else (0, False)


def create_vector_index(chunks: Table) -> None:
    """Build (or rebuild) the ANN index over every row, in segments of bounded size."""
    if not _segmented(LanceHandle(chunks), whole=True):
        _create_whole_vector_index(chunks)


def _create_whole_vector_index(chunks: Table) -> None:
    # One graph over every row, LanceDB's way: its memory grows with the table (~2.5 KB a row).
    from lancedb.index import IvfHnswSq

    # The column goes first: with a config given, lancedb takes the first argument as the column.
    chunks.create_index("vector", config=IvfHnswSq(distance_type="cosine"), name=VECTOR_INDEX, replace=True)


def refresh_keys(table: Table, keys: Sequence[str], *, merge_all: bool = False) -> None:
    """Add B-tree indexes on the key columns if missing and fold new rows into every index of the table.

    Folding adds each index a delta segment over the new rows, and the B-trees' segments are bounded as
    the vector and full-text ones are (`refresh_indexes`); with `merge_all` each B-tree becomes one.
    """
    lance = LanceHandle(table)
    if _refresh_keys(lance, keys, merge_all=merge_all):
        _compact_if_fragmented(lance)


def _refresh_keys(lance: LanceHandle, keys: Sequence[str], *, merge_all: bool) -> bool:
    # False when Lance could not fold the new rows and LanceDB's optimize did it instead.
    table = lance.table
    states = wait(index_states(table))
    present = {s.name for s in states}
    missing = [k for k in keys if f"{k}_idx" not in present]
    if missing:
        from lancedb.index import BTree

        for key in missing:
            table.create_index(key, config=BTree(), name=f"{key}_idx")
    # The vector index's new rows are indexed by its own upkeep, in segments of bounded size.
    stale = [s.name for s in states if s.unindexed_rows and s.name != VECTOR_INDEX]
    if stale and not _fold_new_rows(lance, stale):
        return False
    _bound_key_segments(
        lance, [s for s in states if s.name.removesuffix("_idx") in keys], merge_all=merge_all
    )
    return True


def _fold_new_rows(lance: LanceHandle, stale: Sequence[str]) -> bool:
    # LanceDB's optimize also compacts the table's files, and once the new rows are indexed that merges
    # each write's small file into the large ones: the whole table rewritten per write, a cost growing
    # with the table. Through Lance the indexes alone are brought up to date, and
    # files are compacted only once they pile up. Every index's new rows become a segment of their own,
    # in one call (one commit, and one version for cleanup to drop): merging them into a B-tree
    # rewrites all of it, a cost growing with the table where a segment costs only the write's rows
    # (benchmarks/index_upkeep.py keys), so B-trees' segments are bounded as the others' are.
    if _merged_newest(lance, stale, 0):
        return True
    lance.table.optimize()  # no Lance, or it refused: LanceDB's own way
    return False


def _bound_key_segments(lance: LanceHandle, keys: Sequence[IndexState], *, merge_all: bool) -> None:
    # A lookup searches each segment of a B-tree, so they are kept as few as the other indexes' (the
    # newest merged among themselves, the whole rebuilt once they hold half of its rows). The key
    # indexes of a table are written together, so one call usually merges all of them.
    merges: dict[int, list[str]] = {}
    for state in keys:
        sizes = _segment_rows(lance, state.name)
        if sizes is not None:
            merge = _segments_to_merge(sizes, merge_all=merge_all)
        else:  # Lance cannot say how large each is: one segment, as a merge on every write kept it
            stats = lance.table.index_stats(state.name)
            merge = (stats.num_indices or 1) if stats and (stats.num_indices or 1) > 1 else 0
        if merge:
            merges.setdefault(merge, []).append(state.name)
    for count, names in merges.items():
        if not _merged_newest(lance, names, count):
            lance.table.optimize()  # merges every index's segments, as LanceDB does
            return


def _compact_if_fragmented(lance: LanceHandle) -> None:
    # Merge the table's small data files once a write leaves more than MAX_FRAGMENTS of them. A vector
    # segment covers whole files, so they are filled to less than half of one (vector_segments.py).
    target = int(vector_segments.SEGMENT_ROWS * vector_segments.FILE_SHARE)
    try:
        dataset = lance.dataset()
        if dataset is None:
            return
        if sum(f.metadata.num_rows < target for f in dataset.get_fragments()) <= MAX_FRAGMENTS:
            return
        # Copying the files' encoded pages where Lance can, rather than decoding and encoding every row:
        # re-encoding raised a large add-src's peak memory by about twice what copying does, and more
        # the larger the folder (benchmarks/add_memory_phases.py).
        try:
            dataset.optimize.compact_files(target_rows_per_fragment=target, compaction_mode="try_binary_copy")
        except TypeError:  # a Lance without the mode
            dataset.optimize.compact_files(target_rows_per_fragment=target)
    except Exception:  # compaction only saves reads later; a Lance that cannot leaves the files as they are
        return
    finally:
        lance.committed()
