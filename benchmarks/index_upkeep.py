"""Vector index upkeep: from which table size the ANN index pays for itself.

`threshold`: for each size, one bulk-built database without a vector index (vector search scans every
row exactly) and a copy with the IVF_HNSW_SQ index the store builds; vector and hybrid p50 (wall and
CPU of the process, query embedding excluded) interleaved round by round, recall@10 of the indexed
copy against an exact cosine ranking, and the CPU and wall time of the index build that the write
crossing the threshold pays.

    python benchmarks/index_upkeep.py threshold --sizes 2000,5000,10000,15000,25000 [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.scale import CHUNKS_PER_DOC, DIMENSION, Corpus, bulk_build  # noqa: E402
from haiku_cli.databases import fanout  # noqa: E402
from haiku_cli.databases.pool import DatabasePool  # noqa: E402
from haiku_cli.databases.selection import Selection  # noqa: E402
from haiku_cli.store import Location, indexes, open_database  # noqa: E402
from haiku_cli.store.writer import exclusive  # noqa: E402
from tests.support.hash_embedder import hash_vectors  # noqa: E402

KINDS = ("vector", "hybrid")


def _ms(values: list[float], p: float = 50) -> float:
    return round(float(np.percentile(values, p)) * 1000, 2)


def _cpu_wall(fn: Callable[[], object]) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


async def _timed(pool: DatabasePool, path: Path, queries: list[str], kind: str) -> tuple:
    selection = Selection((Location(path.stem, str(path)),))
    vectors = {q: hash_vectors([q], DIMENSION)[0] for q in queries}

    async def embed(q: str) -> np.ndarray:  # precomputed: the query embedding is excluded
        return vectors[q]

    wall, cpu, hits = [], [], []
    for q in queries:
        w0, c0 = time.perf_counter(), time.process_time()
        found = await fanout.search_set(pool, selection, q, embed_query=embed, search_type=kind, limit=10)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
        hits.append([h.content for h in found])
    return wall, cpu, hits


def _exact_top10(path: Path, queries: list[str]) -> list[set[str]]:
    """The texts of the 10 chunks nearest each query, by exact cosine over every chunk (numpy)."""
    table = open_database(Location("exact", str(path))).chunks
    data = table.search().select(["text", "vector"]).limit(table.count_rows()).to_arrow()
    texts = np.array(data.column("text").to_pylist())
    matrix = np.stack(data.column("vector").to_numpy(zero_copy_only=False)).astype(np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return [set(texts[np.argsort(-(matrix @ v))[:10]]) for v in hash_vectors(queries, DIMENSION)]


def _recall(found: list[list[str]], exact: list[set[str]]) -> float:
    return round(float(np.mean([len(set(f) & e) / 10 for f, e in zip(found, exact, strict=True)])), 3)


def measure(paths: dict[str, Path], queries: list[str], rounds: int) -> dict:
    """p50 wall and CPU per search type for each database, interleaved; recall@10 of vector search."""

    async def run() -> dict:
        pool = DatabasePool()
        samples = {(n, k): ([], [], []) for n in paths for k in KINDS}
        for path in paths.values():  # warm-up: open, load the indexes
            for kind in KINDS:
                await _timed(pool, path, queries[:2], kind)
        for _ in range(rounds):
            for kind in KINDS:
                for name, path in paths.items():
                    got = await _timed(pool, path, queries, kind)
                    for acc, new in zip(samples[name, kind], got, strict=True):
                        acc.extend(new)
        return samples

    samples = asyncio.run(run())
    out: dict = {}
    for name, path in paths.items():
        exact = _exact_top10(path, queries)
        out[name] = {}
        for kind in KINDS:
            wall, cpu, _ = samples[name, kind]
            out[name][kind] = {"p50_ms": _ms(wall), "cpu_p50_ms": _ms(cpu)}
        out[name]["vector"]["recall_at_10"] = _recall(samples[name, "vector"][2][: len(queries)], exact)
    return out


def threshold(corpus: Corpus, sizes: list[int], work: Path, queries_n: int, rounds: int) -> list[dict]:
    """Exact scan against the ANN index at each size, and the index build's cost."""
    results = []
    indexes.VECTOR_INDEX_MIN_ROWS = sys.maxsize  # bulk builds without the vector index
    for size in sizes:
        folder = work / f"threshold-{size}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        exact_db, ann_db = folder / "exact.lancedb", folder / "ann.lancedb"
        docs = size // CHUNKS_PER_DOC
        bulk_build(corpus, exact_db, list(range(docs)))
        shutil.copytree(exact_db, ann_db)
        db = open_database(Location("ann", str(ann_db)))
        with exclusive(db):
            cpu, wall = _cpu_wall(lambda db=db: indexes.create_vector_index(db.chunks))
        rng = np.random.default_rng(size)
        queries = [corpus.query(rng, docs) for _ in range(queries_n)]
        row = {"chunks": size, "load_average": round(os.getloadavg()[0], 2)}
        row["index_build_cpu_s"], row["index_build_wall_s"] = round(cpu, 2), round(wall, 2)
        row.update(measure({"exact": exact_db, "ann": ann_db}, queries, rounds))
        row["load_average_after"] = round(os.getloadavg()[0], 2)
        results.append(row)
        print(json.dumps(row), flush=True)
        shutil.rmtree(folder, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("threshold")
    t.add_argument("--sizes", default="2000,5000,10000,15000,25000")
    for p in (t,):
        p.add_argument("--work", type=Path, default=Path("/tmp/haiku-index-upkeep"))
        p.add_argument("--queries", type=int, default=40)
        p.add_argument("--rounds", type=int, default=2)
        p.add_argument("--json", action="store_true")
    args = parser.parse_args()
    corpus = Corpus()
    if args.mode == "threshold":
        sizes = [int(s) for s in args.sizes.split(",")]
        report = threshold(corpus, sizes, args.work, args.queries, args.rounds)
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
