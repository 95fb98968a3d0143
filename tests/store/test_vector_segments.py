"""Which files each write indexes as a new vector segment: bounded segments, each write paying for its own."""

from __future__ import annotations

import itertools

import pytest

from haiku_cli.store import vector_segments
from haiku_cli.store.vector_segments import Part, most_segments, plan

_ids = itertools.count()


@pytest.fixture(autouse=True)
def _segments_of_100(monkeypatch) -> None:
    monkeypatch.setattr(vector_segments, "SEGMENT_ROWS", 100)


def _segment(*rows: int) -> Part:
    return Part(tuple((next(_ids), r) for r in rows))


def _new(rows: int) -> Part:
    return Part(((next(_ids), rows),), indexed=False)


def _sizes(parts: list[Part], groups: list[list[int]]) -> list[int]:
    rows = {i: r for p in parts for i, r in p.files}
    return sorted(sum(rows[i] for i in g) for g in groups)


def _after(parts: list[Part], groups: list[list[int]]) -> list[int]:
    """Each segment's rows once the groups are built, each replacing the segments it covers."""
    rebuilt = {i for g in groups for i in g}
    kept = [p.rows for p in parts if p.indexed and not rebuilt & set(p.fragment_ids)]
    return sorted(kept + _sizes(parts, groups))


def test_a_first_build_packs_the_files_into_segments_of_at_most_the_bound() -> None:
    parts = [_new(30) for _ in range(7)]
    assert _sizes(parts, plan(parts)) == [30, 90, 90]


def test_a_file_larger_than_a_segment_is_a_segment_of_its_own() -> None:
    parts = [_new(30), _new(250), _new(30)]
    assert _sizes(parts, plan(parts)) == [60, 250]  # the two small files beside it as one


def test_full_segments_are_never_rebuilt_by_a_write() -> None:
    full = [_segment(50, 50), _segment(80)]  # full: at least 3/4 of the bound
    parts = [*full, _new(10)]
    groups = plan(parts)
    assert _sizes(parts, groups) == [10]
    assert not {i for g in groups for i in g} & {i for p in full for i in p.fragment_ids}


def test_new_rows_join_the_small_segments_once_they_hold_half_of_the_largest() -> None:
    parts = [_segment(80), _segment(40), _new(10)]
    assert _after(parts, plan(parts)) == [10, 40, 80]  # 10 beside 40: left alone
    parts = [_segment(80), _segment(40), _segment(10), _new(10)]
    assert _after(parts, plan(parts)) == [60, 80]  # 20 beside 40: merged into one graph


def test_small_segments_past_the_bound_merge_the_smallest_geometrically() -> None:
    parts = [_segment(40), _segment(8), _segment(4), _segment(2), _new(1)]
    assert _after(parts, plan(parts)) == [1, 2, 4, 8, 40]  # five small: left alone
    parts = [_segment(45), _segment(8), _segment(4), _segment(2), _segment(1), _new(1), _new(1)]
    # Six small (the new files are one): the two smallest merged, then each next one no larger than
    # those merged so far (2, 4 and 8), never the largest.
    assert _after(parts, plan(parts)) == [17, 45]


def test_writes_keep_the_segments_bounded_in_number_and_size() -> None:
    parts: list[Part] = []
    rebuilt_rows = 0
    for write in range(300):
        parts.append(_new(1 + write % 7))
        groups = plan(parts)
        built = {i for g in groups for i in g}
        rows = {i: r for p in parts for i, r in p.files}
        kept = [p for p in parts if p.indexed and not built & set(p.fragment_ids)]
        parts = kept + [Part(tuple((i, rows[i]) for i in g)) for g in groups]
        rebuilt_rows += sum(rows[i] for i in built)
        assert all(p.indexed for p in parts)
        assert all(p.rows <= 100 for p in parts)
        assert len(parts) <= most_segments(sum(p.rows for p in parts))
    total = sum(p.rows for p in parts)
    assert total == sum(1 + w % 7 for w in range(300))
    # Each row is indexed a few times over (merges grow geometrically), not once per write.
    assert rebuilt_rows < 8 * total


def test_merging_all_packs_every_small_segment_within_the_bound() -> None:
    parts = [_segment(80), _segment(30), _segment(30), _segment(30), _new(5)]
    assert _after(parts, plan(parts, merge_all=True)) == [80, 95]
