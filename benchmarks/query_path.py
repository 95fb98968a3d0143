"""The query path at scale: per-query wall and CPU time, fan-out ratio and ANN recall, on built databases.

Runs on the databases `benchmarks/fanout_floor.py --build` leaves in its work folder (`SIZE/one.lancedb`
and the same corpus split over `SIZE/split4/part0..3.lancedb`), with the same queries, through
`fanout.search_set` on a warm pool with the query vector precomputed (embedding excluded). The machine is
shared, so beside wall time it reports CPU time per query (all threads of the process), and it interleaves
one database and the split, type by type, over several rounds so both see the same load. Recall@10 is
measured for vector search, one database and split, against an exact cosine ranking of the whole corpus
computed with numpy. `split_same_top10_as_one` counts the queries whose split top 10 (texts, in order) is
one database's. To compare two versions of haiku, run this script from each checkout in turn (same
--work).

    python benchmarks/query_path.py --sizes 100000 [--rounds 3] [--json]
    python benchmarks/query_path.py --sizes "" --real WORK/single.lancedb --data ../shared/data/cisi

`--real` takes a database built with the bundled model (e.g. by retrieval_quality.py --work WORK) and
measures recall@10 on a copy with the ANN index forced, with the data set's queries.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Table, result  # noqa: E402
from benchmarks.fanout_floor import CORPORA, layout  # noqa: E402
from benchmarks.scale import CHUNKS_PER_DOC, DIMENSION, QUERIES, SPLIT, Corpus  # noqa: E402
from haiku_cli.databases import fanout  # noqa: E402
from haiku_cli.databases.pool import DatabasePool  # noqa: E402
from haiku_cli.databases.selection import Selection  # noqa: E402
from haiku_cli.store import Location, open_database  # noqa: E402
from tests.support.hash_embedder import hash_vectors  # noqa: E402

KINDS = ("fts", "vector", "hybrid")


def _ms(values: list[float], p: float = 50) -> float:
    return round(float(np.percentile(values, p)) * 1000, 2)


async def _timed(pool: DatabasePool, selection: Selection, queries: list[str], kind: str, embed) -> tuple:
    wall, cpu, hits = [], [], []
    for q in queries:
        w0, c0 = time.perf_counter(), time.process_time()
        found = await fanout.search_set(pool, selection, q, embed_query=embed, search_type=kind, limit=10)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
        hits.append([h.content for h in found])
    return wall, cpu, hits


def _exact_top10(path: Path, vectors: list[np.ndarray], rows: int) -> list[set[str]]:
    """The texts of the 10 chunks nearest each query vector, by exact cosine over every chunk."""
    table = open_database(Location("exact", str(path))).chunks
    data = table.search().select(["text", "vector"]).limit(rows).to_arrow()
    texts = np.array(data.column("text").to_pylist())
    matrix = np.stack(data.column("vector").to_numpy(zero_copy_only=False)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return [set(texts[np.argsort(-(matrix @ (v / np.linalg.norm(v))))[:10]]) for v in vectors]


def run_size(corpus: Corpus, chunks: int, work: Path, rounds: int) -> dict:
    folder = work / str(chunks)
    one = Selection((Location("one", str(folder / "one.lancedb")),))
    split = Selection(tuple(layout(folder, SPLIT)))
    rng = np.random.default_rng(chunks)  # the queries benchmarks/scale.py asks
    queries = [corpus.query(rng, chunks // CHUNKS_PER_DOC) for _ in range(QUERIES)]
    vectors = {q: hash_vectors([q], DIMENSION)[0] for q in queries}

    async def embed(q: str) -> np.ndarray:
        return vectors[q]

    async def measure() -> dict:
        pool = DatabasePool()
        samples: dict = {(k, s): ([], [], []) for k in KINDS for s in ("one", "split")}
        for kind in KINDS:  # warm-up: open every database, load every index once
            await _timed(pool, one, queries[:1], kind, embed)
            await _timed(pool, split, queries[:1], kind, embed)
        for _ in range(rounds):
            for kind in KINDS:
                for name, selection in (("one", one), ("split", split)):
                    got = await _timed(pool, selection, queries, kind, embed)
                    for acc, new in zip(samples[kind, name], got, strict=True):
                        acc.extend(new)
        return samples

    samples = asyncio.run(measure())
    out: dict = {"chunks": chunks, "queries": len(queries) * rounds, "load_average": os.getloadavg()[0]}
    for kind in KINDS:
        (w1, c1, _), (w4, c4, _) = samples[kind, "one"], samples[kind, "split"]
        out[kind] = {
            "one_p50_ms": _ms(w1),
            "one_p95_ms": _ms(w1, 95),
            "one_cpu_p50_ms": _ms(c1),
            "split4_p50_ms": _ms(w4),
            "split4_p95_ms": _ms(w4, 95),
            "split4_cpu_p50_ms": _ms(c4),
            "fanout_over_one_p50": round(statistics.median(w4) / statistics.median(w1), 2),
            "fanout_over_one_cpu_p50": round(statistics.median(c4) / statistics.median(c1), 2),
            # A split should rank as one database does: queries whose top 10 (texts, in order) match.
            "split_same_top10_as_one": sum(
                a == b for a, b in zip(samples[kind, "one"][2], samples[kind, "split"][2], strict=True)
            )
            // rounds,
        }
    exact = _exact_top10(folder / "one.lancedb", [vectors[q] for q in queries], chunks)
    for name in ("one", "split"):
        found = samples["vector", name][2][: len(queries)]
        recall = [len(set(f) & e) / 10 for f, e in zip(found, exact, strict=True)]
        out["vector"][f"{name}_recall_at_10"] = round(float(np.mean(recall)), 3)
    return out


def real_embedding_recall(database: Path, data: Path) -> dict:
    """Recall@10 of vector candidates on a copy of a database built with the bundled model, index forced."""
    from haiku_cli.embed import load_embedder
    from haiku_cli.search.candidates import find_candidates
    from haiku_cli.store.indexes import create_vector_index

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / database.name
        shutil.copytree(database, copy)
        db = open_database(Location("real", str(copy)))
        create_vector_index(db.chunks)  # whatever the table's size: this measures the ANN path
        queries = [json.loads(line)["text"] for line in (data / "queries.jsonl").read_text().splitlines()]
        embedder = load_embedder()

        async def embed_all() -> list[np.ndarray]:
            return [await embedder.embed_query(q) for q in queries]

        vectors = asyncio.run(embed_all())
        rows = db.chunks.count_rows()
        exact = _exact_top10(copy, vectors, rows)
        recall = []
        for vector, best in zip(vectors, exact, strict=True):
            found = find_candidates(db, query="", query_vector=vector, search_type="vector", k=10)
            recall.append(len({c.text for c in found} & best) / 10)
        return {
            "database": str(database),
            "chunks": rows,
            "queries": len(queries),
            "recall_at_10": round(float(np.mean(recall)), 3),
        }


def query_rows(table: Table, report: list[dict]) -> None:
    """Warm p50/p95 per size and type, one database and split over SPLIT, and ANN recall@10."""
    table.columns = ("chunks, type", "one database p50 (p95), CPU p50", f"split over {SPLIT}", "ratio")
    table.comparison = "one database (query embedding excluded; hashed-word vectors)"
    for size in report:
        if "recall_at_10" in size:
            table.add(
                f"{size['chunks']:,} real-embedding chunks, vector", f"recall@10 {size['recall_at_10']}"
            )
            continue
        for kind in KINDS:
            got = size[kind]
            recall = f", recall@10 {got['one_recall_at_10']}" if "one_recall_at_10" in got else ""
            split_recall = f", recall@10 {got['split_recall_at_10']}" if "split_recall_at_10" in got else ""
            table.add(
                f"{size['chunks']:,}, {kind}",
                f"{got['one_p50_ms']} ms ({got['one_p95_ms']}), {got['one_cpu_p50_ms']} ms{recall}",
                f"{got['split4_p50_ms']} ms ({got['split4_p95_ms']}), {got['split4_cpu_p50_ms']} ms"
                + split_recall,
                f"{got['fanout_over_one_p50']}x",
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=CORPORA, help="where built corpora are kept")
    parser.add_argument("--sizes", default="100000", help="chunk counts already built there")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every query")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--real", type=Path, help="also: a database built with the bundled model from --data")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "cisi")
    args = parser.parse_args()
    sizes = " and ".join(f"{int(n):,}" for n in args.sizes.split(",") if n)
    with result("query", f"Query latency at {sizes} chunks") as table:
        corpus = Corpus()
        report: list[dict] = [
            run_size(corpus, int(s), args.work, args.rounds) for s in args.sizes.split(",") if s
        ]
        if args.real:
            report.append(real_embedding_recall(args.real, args.data))
        query_rows(table, report)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
