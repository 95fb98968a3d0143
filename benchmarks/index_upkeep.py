"""Vector index upkeep: from which table size the ANN index pays, and what keeping it current costs.

`threshold`: for each size, one bulk-built database without a vector index (vector search scans every
row exactly) and a copy with the IVF_HNSW_SQ index the store builds; vector and hybrid p50 (wall and
CPU of the process, query embedding excluded) interleaved round by round, recall@10 of the indexed
copy against an exact cosine ranking, and the CPU and wall time of the index build that the write
crossing the threshold pays.

`upkeep`: a copy of a database built with its index (`--base`, e.g. scale.py's `SIZE/one.lancedb`),
then --writes writes of --batch chunks each followed by the store's per-write upkeep (`after_write`);
per write the upkeep's CPU and wall time and the vector index's segments, and every --every writes
vector and hybrid p50 and recall@10. `--policy count` replays the rule before per-segment merging
(rebuild the whole index past MAX_VECTOR_SEGMENTS segments) for comparison. `--batch 10` is one note.

`add`: whole `haiku add "note"` processes on a copy of `--base` (an `ollama:hash` database, as scale.py
builds) with the hashing embedder served; with `--before TREE` the same from another checkout on its
own copy, alternating order each round: median wall and CPU (user + system) and the CPU ratio.

    python benchmarks/index_upkeep.py threshold --sizes 2000,5000,10000,15000,25000 [--json]
    python benchmarks/index_upkeep.py upkeep --base /tmp/haiku-scale/100000/one.lancedb --policy tiered
    python benchmarks/index_upkeep.py upkeep --base ... --batch 10 --writes 12 --queries 2 --rounds 1
    python benchmarks/index_upkeep.py add --base /tmp/haiku-scale/100000/one.lancedb --before /tmp/before
    python benchmarks/index_upkeep.py compare --databases A.lancedb,B.lancedb   # interleaved queries
    python benchmarks/index_upkeep.py keys --sizes 100000,400000 --writes 12   # B-tree upkeep per write

`keys`: a table of N rows with the chunks' key columns (random ids, ten rows per document id) and their
B-tree indexes, then --writes writes of 50 rows each followed by the store's `refresh_keys`; per write its
CPU, with the store's rule (each write's rows a segment of their own, segments bounded) and, interleaved,
with every write's rows merged into the B-trees (the rule before: a rewrite of each whole B-tree).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Table, result  # noqa: E402
from benchmarks.query_path import _ms  # noqa: E402
from benchmarks.query_path import _timed as timed_queries  # noqa: E402
from benchmarks.remote_embedder import _run as run_haiku  # noqa: E402
from benchmarks.scale import CHUNKS_PER_DOC, DIMENSION, Corpus, _batch_tables, bulk_build  # noqa: E402
from haiku_cli.databases.pool import DatabasePool  # noqa: E402
from haiku_cli.databases.selection import Selection  # noqa: E402
from haiku_cli.store import Location, indexes, open_database  # noqa: E402
from haiku_cli.store.blocking import wait  # noqa: E402
from haiku_cli.store.maintenance import after_write  # noqa: E402
from haiku_cli.store.writer_lock import exclusive  # noqa: E402
from tests.support.hash_embedder import hash_vectors, serve_hash_embedder  # noqa: E402

KINDS = ("vector", "hybrid")


def _cpu_wall(fn: Callable[[], object]) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


async def _timed(pool: DatabasePool, path: Path, queries: list[str], kind: str) -> tuple:
    """Wall and CPU seconds and the hits' texts per query, as query_path.py times them, on one database."""
    vectors = {q: hash_vectors([q], DIMENSION)[0] for q in queries}

    async def embed(q: str) -> np.ndarray:  # precomputed: the query embedding is excluded
        return vectors[q]

    return await timed_queries(pool, Selection((Location(path.stem, str(path)),)), queries, kind, embed)


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


def upkeep(corpus: Corpus, base: Path, work: Path, args: argparse.Namespace) -> dict:
    """Writes of `args.batch` chunks onto a copy of `base`, each with the store's upkeep, measured."""
    if args.policy == "count":
        indexes._segment_rows = lambda lance, index: None  # no per-segment merging: the old rule
    indexes.MAX_INDEX_DELTAS = args.max_deltas or indexes.MAX_INDEX_DELTAS
    indexes.REBUILD_DELTA_SHARE = args.share or indexes.REBUILD_DELTA_SHARE
    path = work / f"upkeep-{args.policy}-{os.getpid()}.lancedb"
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(base, path)
    db = open_database(Location(path.stem, str(path)))
    first = db.documents.count_rows()
    per_write = args.batch // CHUNKS_PER_DOC
    rng = np.random.default_rng(first)
    queries = [corpus.query(rng, first + args.writes * per_write) for _ in range(args.queries)]
    out: dict = {"policy": args.policy, "max_deltas": indexes.MAX_INDEX_DELTAS}
    out |= {"rebuild_share": indexes.REBUILD_DELTA_SHARE, "base_chunks": db.chunks.count_rows()}
    out |= {"writes": [], "queries": []}
    out["queries"].append({"after": 0, **measure({"db": path}, queries, args.rounds)["db"]})
    print(json.dumps(out["queries"][-1]), flush=True)
    for i in range(args.writes):
        docs = list(range(first + i * per_write, first + (i + 1) * per_write))
        with exclusive(db):
            documents, chunks = _batch_tables(corpus, db, docs)
            db.documents.add(documents)
            db.chunks.add(chunks)
        cpu, wall = _cpu_wall(lambda: after_write(db))
        row = {"write": i + 1, "upkeep_cpu_s": round(cpu, 2), "upkeep_wall_s": round(wall, 2)}
        row["upkeep_cpu_ms"], row["upkeep_wall_ms"] = round(cpu * 1000, 1), round(wall * 1000, 1)
        row["segments"] = next(
            s.segments for s in wait(indexes.index_states(db.chunks)) if s.name == "vector_idx"
        )
        row["load_average"] = round(os.getloadavg()[0], 2)
        out["writes"].append(row)
        print(json.dumps(row), flush=True)
        if (i + 1) % args.every == 0:
            out["queries"].append({"after": i + 1, **measure({"db": path}, queries, args.rounds)["db"]})
            print(json.dumps(out["queries"][-1]), flush=True)
    cpus = [w["upkeep_cpu_s"] for w in out["writes"]]
    out["upkeep_cpu_total_s"], out["upkeep_cpu_max_s"] = round(sum(cpus), 1), max(cpus)
    out["upkeep_cpu_median_s"] = round(statistics.median(w["upkeep_cpu_ms"] for w in out["writes"]) / 1000, 3)
    return out


def add_processes(base: Path, work: Path, trees: dict[str, Path], rounds: int) -> dict:
    """Whole `haiku add "note"` processes on copies of `base` (one per tree), its embedder served."""
    copies = {name: work / f"add-{name}-{os.getpid()}.lancedb" for name in trees}
    for path in copies.values():
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(base, path)
    dimension = open_database(Location("base", str(base))).embedder.dimension
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    try:
        with serve_hash_embedder(dimension) as url:
            config = work / f"add-{os.getpid()}.toml"
            config.write_text(f'[embedder]\nmodel = "ollama:hash"\nbase_url = "{url}"\n')
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OLLAMA", "HAIKU"))}
            env.update(HAIKU_CONFIG=str(config), HAIKU_DATA_DIR=str(work / "data"))
            for r in range(rounds + 1):  # the first round warms the copies and the page cache
                for name in trees if r % 2 == 0 else reversed(trees):
                    got = run_haiku(
                        trees[name], env, "add", f"a note {r} about herons", "--db", str(copies[name])
                    )
                    if r:
                        times[name].append(got)
    finally:
        for path in copies.values():
            shutil.rmtree(path, ignore_errors=True)
    out: dict = {}
    for name, rows in times.items():
        out[name] = {
            "wall_s": round(statistics.median(w for w, _ in rows), 3),
            "cpu_s": round(statistics.median(c for _, c in rows), 3),
        }
    if "before" in out:
        out["before_over_after_cpu"] = round(out["before"]["cpu_s"] / out["after"]["cpu_s"], 2)
    return out


def key_upkeep(sizes: list[int], work: Path, writes: int) -> dict:
    """Per-write CPU (ms) of `refresh_keys` on tables of each size: segments bounded vs merged whole."""
    import uuid

    import lancedb
    import pyarrow as pa

    def rows(start: int, n: int) -> pa.Table:
        ids = [uuid.uuid4().hex for _ in range(n)]
        return pa.table({"id": ids, "document_id": [f"d{i // 10:07d}" for i in range(start, start + n)]})

    def merged_whole(sizes: list[int], *, merge_all: bool) -> int:
        return len(sizes) if len(sizes) > 1 else 0

    rules = {"segments": indexes._segments_to_merge, "merged_whole": merged_whole}
    out: dict = {}
    for size in sizes:
        tables = {}
        for rule in rules:
            path = work / f"keys-{size}-{rule}"
            shutil.rmtree(path, ignore_errors=True)
            tables[rule] = lancedb.connect(path).create_table("t", rows(0, size))
            indexes.refresh_keys(tables[rule], ("id", "document_id"))
        cpu: dict[str, list[float]] = {rule: [] for rule in rules}
        for w in range(writes):
            for rule, pick in rules.items():  # interleaved, so load falls on both alike
                table = tables[rule]
                table.add(rows(size + w * 50, 50))
                indexes._segments_to_merge = pick
                try:
                    cpu[rule].append(
                        _cpu_wall(lambda t=table: indexes.refresh_keys(t, ("id", "document_id")))[0]
                    )
                finally:
                    indexes._segments_to_merge = rules["segments"]
        out[str(size)] = {
            rule: {
                "cpu_ms_median": round(statistics.median(v) * 1000, 1),
                "cpu_ms": [round(x * 1000, 1) for x in v],
            }
            for rule, v in cpu.items()
        }
        out[str(size)]["segments_after"] = tables["segments"].index_stats("id_idx").num_indices
    out["load_average"] = round(os.getloadavg()[0], 2)
    return out


def key_rows(table: Table, report: dict) -> None:
    """Per-write B-tree upkeep per table size, the store's rule against merging every write whole."""
    for size, got in report.items():
        if size.isdigit():
            ours, whole = got["segments"]["cpu_ms_median"], got["merged_whole"]["cpu_ms_median"]
            table.add(
                f"per-write B-tree upkeep (50 rows) at {int(size):,} rows, CPU median",
                f"{ours} ms ({got['segments_after']} segments after)",
                f"each write merged into the whole B-tree: {whole} ms",
                f"{ours / whole:.2f}x" if whole else "",
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("threshold")
    t.add_argument("--sizes", default="2000,5000,10000,15000,25000")
    u = sub.add_parser("upkeep")
    u.add_argument("--base", type=Path, required=True, help="a database with its vector index")
    u.add_argument("--policy", choices=("tiered", "count"), default="tiered")
    u.add_argument("--writes", type=int, default=30)
    u.add_argument("--batch", type=int, default=1000, help="chunks per write")
    u.add_argument("--max-deltas", type=int, help="MAX_INDEX_DELTAS (default: the store's)")
    u.add_argument("--share", type=float, help="REBUILD_DELTA_SHARE (default: the store's)")
    u.add_argument("--every", type=int, default=10, help="measure queries after this many writes")
    a = sub.add_parser("add")
    a.add_argument("--base", type=Path, required=True, help="a database whose embedder is ollama:hash")
    a.add_argument("--before", type=Path, help="another haiku checkout to compare with this one")
    c = sub.add_parser("compare")
    c.add_argument("--databases", required=True, help="comma-separated databases of the same corpus")
    k = sub.add_parser("keys")
    k.add_argument("--sizes", default="100000,400000")
    k.add_argument("--writes", type=int, default=12)
    for p in (t, u, a, c, k):
        p.add_argument("--work", type=Path, default=Path("/tmp/haiku-index-upkeep"))
        p.add_argument("--queries", type=int, default=40)
        p.add_argument("--rounds", type=int, default=2)
        p.add_argument("--json", action="store_true")
    args = parser.parse_args()
    corpus = Corpus()
    if args.mode == "threshold":
        sizes = [int(s) for s in args.sizes.split(",")]
        report = threshold(corpus, sizes, args.work, args.queries, args.rounds)
    elif args.mode == "keys":
        with result("upkeep", "Index upkeep per write") as table:
            report = key_upkeep([int(s) for s in args.sizes.split(",")], args.work, args.writes)
            key_rows(table, report)
        if not args.json:
            print(json.dumps(report, indent=1))
    elif args.mode == "upkeep":
        report = upkeep(corpus, args.base, args.work, args)
    elif args.mode == "add":
        trees = {"before": args.before, "after": REPO} if args.before else {"after": REPO}
        report = {"load_average": round(os.getloadavg()[0], 2)}
        report |= add_processes(args.base, args.work, trees, args.rounds)
        report["load_average_after"] = round(os.getloadavg()[0], 2)
        print(json.dumps(report), flush=True)
    else:
        paths = {p: Path(p) for p in args.databases.split(",")}
        docs = open_database(Location("first", next(iter(paths)))).documents.count_rows()
        rng = np.random.default_rng(docs)
        report = measure(paths, [corpus.query(rng, docs) for _ in range(args.queries)], args.rounds)
        report["load_average"] = os.getloadavg()
        print(json.dumps(report), flush=True)
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
