"""How widely the ANN index is searched: alone, and as one database of a fan-out."""

from __future__ import annotations

from haiku_cli.search.candidates import ann_ef, pool_ef


def test_a_part_of_a_fan_out_is_searched_less_widely_than_a_lone_table() -> None:
    # 100k chunks over 4 databases: each part's share of the breadth, not a lone table's floor.
    assert ann_ef(25_000, 10) == 1_200
    assert ann_ef(25_000, 10, parts=4) == 301  # its own size's breadth, not the lone floor
    assert ann_ef(5_000, 10, parts=4) == 300  # the floor, shared
    assert pool_ef(25_000, 50, parts=4) == 600
    assert pool_ef(25_000, 50) == 1_200
    # Large parts keep their own breadth (the floor no longer binds), and k x refinement still holds.
    assert ann_ef(250_000, 10, parts=4) == ann_ef(250_000, 10) == 3_012
    assert ann_ef(2_000, 200, parts=4) == 1_000


def test_the_largest_tables_are_searched_widely_for_recall_and_their_hybrid_pool_is_capped() -> None:
    # Vector search's breadth grows with the table up to a cap where 1M real embeddings recall 0.998
    # (100k recall 1.0 at the floor); hybrid's pool, which fusion re-ranks, is capped lower still.
    assert ann_ef(1_000_000, 10) == ann_ef(400_000, 10) == 4_000
    assert ann_ef(100_000, 10) == 1_204
    assert pool_ef(100_000, 50) == 1_250
    assert pool_ef(1_000_000, 50) == pool_ef(400_000, 50) == 2_000
    # A deep pool still asks the graph for enough neighbours to refine.
    assert pool_ef(1_000_000, 1_000) == 5_000


def test_an_index_in_segments_is_searched_per_graph_no_wider_than_one_graph_in_all() -> None:
    # Each segment is a graph of its own rows, searched as a table of that size; together they are
    # searched no more widely than one graph over every row (whose breadth is capped).
    assert ann_ef(100_000, 10, segments=2) == 602  # 50k rows each: their own breadth, half the whole
    assert ann_ef(300_000, 10, segments=6) == 602
    assert ann_ef(1_000_000, 10, segments=20) == 200  # the cap of 4,000 shared by 20 graphs
    assert 20 * ann_ef(1_000_000, 10, segments=20) <= ann_ef(1_000_000, 10)
    assert pool_ef(1_000_000, 50, segments=20) == 100  # the pool's cap shared by 20 graphs
    assert pool_ef(1_000_000, 200, segments=20) == 200  # each still finds the k the pool refines
    assert ann_ef(1_000_000, 10, segments=1) == ann_ef(1_000_000, 10)
