"""A corpus split over several databases returns, for every query, exactly one database's top 10."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest

from haiku_cli.databases import fanout
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import Selection
from haiku_cli.store import Location
from tests.support.hash_embedder import hash_vectors
from tests.support.single_chunks import WORDS, single_chunk_database, word_texts

DIMENSION = 16  # few slots: many chunks share a vector's neighbourhood, and some share a vector
SPLITS = (2, 5)


def _corpus() -> list[str]:
    # 300 chunks over a vocabulary of 13 words: many equal BM25 scores (the same length, the same counts of
    # the query's words), and 30 texts written twice, in different documents, so equal in every score.
    rng = np.random.default_rng(43)
    texts = word_texts(rng, 270)
    texts += [texts[int(i)] for i in rng.integers(270, size=30)]
    return [texts[int(i)] for i in rng.permutation(len(texts))]


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Selection]:
    """The corpus in one database and split 2 and 5 ways (chunk i to part i % N)."""
    folder = tmp_path_factory.mktemp("splits")
    texts = _corpus()
    vectors = hash_vectors(texts, DIMENSION).tolist()
    out = {}
    for parts in (1, *SPLITS):
        locations = []
        for i in range(parts):
            path = folder / f"split{parts}" / f"part{i}.lancedb"
            single_chunk_database(path, texts[i::parts], vectors[i::parts])
            locations.append(Location(f"part{i}", str(path)))
        out[parts] = Selection(tuple(locations))
    return out


def _queries() -> list[str]:
    rng = np.random.default_rng(7)
    return [*WORDS, *(" ".join(rng.choice(WORDS, size=int(rng.integers(2, 5)))) for _ in range(12))]


def _top10(pool: DatabasePool, selection: Selection, query: str, kind: str) -> list[tuple[str, float]]:
    vector = hash_vectors([query], DIMENSION)[0]

    async def embed(_: str) -> np.ndarray:
        return vector

    hits = anyio.run(
        lambda: fanout.search_set(
            pool, selection, query, embed_query=embed, search_type=kind, limit=10, check_sources=False
        )
    )
    return [(h.content, h.score) for h in hits]


@pytest.mark.parametrize("kind", ["fts", "vector", "hybrid"])
def test_every_query_ranks_the_same_top_10_over_every_split(layouts, kind: str, tmp_path: Path) -> None:
    pool = DatabasePool()
    tied = 0
    for query in _queries():
        one = _top10(pool, layouts[1], query, kind)
        assert len(one) == 10
        scores = [s for _, s in one]
        tied += len(scores) - len(set(scores))
        for parts in SPLITS:
            split = _top10(pool, layouts[parts], query, kind)
            assert [t for t, _ in split] == [t for t, _ in one], (query, parts)
            assert [s for _, s in split] == pytest.approx(scores, rel=1e-5)
    assert tied  # the corpus ties scores within a top 10: the order among them is what is checked


def test_a_database_is_searched_deeper_when_its_own_statistics_bury_the_sets_best(tmp_path: Path) -> None:
    # `short` holds short chunks, so by its own average length its three long chunks, heron thrice in each,
    # rank below all 40 short ones (heron once); `long`'s long chunks make the set's average long, under
    # which the long three are the set's best. `short`'s best 3 x limit are all short ones.
    short = [f"heron reed{i}" for i in range(40)]
    short += ["heron heron heron " + " ".join(f"sedge{i}x{j}" for j in range(9)) for i in range(3)]
    long = [" ".join(f"stone{i}x{j}" for j in range(60)) for i in range(60)]
    texts = short + long
    single_chunk_database(tmp_path / "whole.lancedb", texts, [[1.0, 0.0]] * len(texts))
    single_chunk_database(tmp_path / "short.lancedb", short, [[1.0, 0.0]] * len(short))
    single_chunk_database(tmp_path / "long.lancedb", long, [[1.0, 0.0]] * len(long))
    pool = DatabasePool()

    def top(*names: str) -> list[tuple[str, float]]:
        selection = Selection(tuple(Location(n, str(tmp_path / f"{n}.lancedb")) for n in names))
        found = anyio.run(
            lambda: fanout.search_set(pool, selection, "heron", embed_query=None, search_type="fts", limit=2)
        )
        return [(h.content, h.score) for h in found]

    own = top("short")
    assert all(text.startswith("heron reed") for text, _ in own)
    one = top("whole")
    assert all(text.startswith("heron heron heron") for text, _ in one)
    split = top("short", "long")
    assert [t for t, _ in split] == [t for t, _ in one]
    assert [s for _, s in split] == pytest.approx([s for _, s in one], rel=1e-5)


def test_equal_similarities_at_a_splits_cut_are_read_through(tmp_path: Path) -> None:
    # 30 chunks at the same similarity, stored last-written-first: each database's own 10 of its 15 are
    # its index's choice, and the set's 10 must be the first by text, as one database's are.
    tied = [f"tied{i:02d}" for i in range(30)][::-1]
    texts = [*tied, *(f"far{i}" for i in range(10))]
    vectors = [[1.0, 0.0]] * 30 + [[0.0, 1.0]] * 10
    single_chunk_database(tmp_path / "whole.lancedb", texts, vectors)
    for i in range(2):
        single_chunk_database(tmp_path / f"part{i}.lancedb", texts[i::2], vectors[i::2])
    pool = DatabasePool()

    def top(*names: str) -> list[str]:
        async def embed(_: str) -> np.ndarray:
            return np.array([1.0, 0.0], dtype=np.float32)

        selection = Selection(tuple(Location(n, str(tmp_path / f"{n}.lancedb")) for n in names))
        found = anyio.run(
            lambda: fanout.search_set(pool, selection, "q", embed_query=embed, search_type="vector", limit=10)
        )
        return [h.content for h in found]

    assert top("whole") == [f"tied{i:02d}" for i in range(10)]
    assert top("part0", "part1") == top("whole")
