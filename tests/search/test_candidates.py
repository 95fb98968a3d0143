"""How widely the ANN index is searched: alone, and as one database of a fan-out."""

from __future__ import annotations

from haiku_cli.search.candidates import ann_ef, pool_ef


def test_a_part_of_a_fan_out_is_searched_less_widely_than_a_lone_table() -> None:
    # 100k chunks over 4 databases: each part's share of the breadth, not a lone table's floor.
    assert ann_ef(25_000, 10) == 1_200
    assert ann_ef(25_000, 10, parts=4) == 625
    assert pool_ef(25_000, 50, parts=4) == 600
    assert pool_ef(25_000, 50) == 1_200
    # Large parts keep their own breadth (the floor no longer binds), and k x refinement still holds.
    assert ann_ef(250_000, 10, parts=4) == ann_ef(250_000, 10) == 4_000
    assert ann_ef(2_000, 200, parts=4) == 1_000


def test_hybrid_pool_of_the_largest_tables_is_searched_half_as_widely_as_vector_search() -> None:
    # Vector search's breadth is capped for large tables; the pool's is half of it there, as it is below.
    assert pool_ef(1_000_000, 50) == ann_ef(1_000_000, 10) // 2 == 2_000
    assert pool_ef(100_000, 50) == ann_ef(100_000, 10) // 2 == 1_250
    # A deep pool still asks the graph for enough neighbours to refine.
    assert pool_ef(1_000_000, 1_000) == 5_000
