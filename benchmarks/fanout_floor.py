"""Fan-out at the floor: `search_set`'s CPU and wall over the bare concurrent LanceDB queries, paired.

On `scale.py`'s synthetic corpus in one database and split over 2, 4 and 8 (document i to part i % N;
`--build` writes the layouts missing under `--work`, a gitignored folder kept between runs), per search
type and layout:

- `floor`: the LanceDB queries a search of that type asks every database, bare, gathered concurrently on
  one event loop with no haiku code around them: as deep, with the same search breadth, and with the
  columns a search needs to show its hits (on a split, with the text set-wide BM25 counts terms in, and
  for hybrid the vectors full-text hits are scored by). No search of the set can cost less while every
  database answers its own queries;
- `haiku`: `fanout.search_set` on a warm pool, the query vector precomputed (embedding excluded).

A loaded machine slows both alike only if both run under the same load, so the two are paired: for
every query, floor and haiku run back to back (which goes first alternates), CPU (all threads of the
process) and wall timed for each, over several rounds of every query. Each round gives haiku's median
over the floor's median; the verdict is the median of the rounds' ratios, with their min-max, and a
bootstrap 90% interval of the ratio over the paired queries of all rounds. The target: <= 1.25x.
The process runs as haiku's long-lived hosts do: the CLI's garbage-collection threshold, and what the
warm-up loaded frozen out of later collections (store/heap.freeze_long_lived), on both sides alike.

    python benchmarks/fanout_floor.py --build [--size 100000] [--parts 2,4,8] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Table, result  # noqa: E402
from benchmarks.scale import CHUNKS_PER_DOC, DIMENSION, QUERIES, Corpus, bulk_build  # noqa: E402
from haiku_cli.cli.app import YOUNG_COLLECTION  # noqa: E402
from haiku_cli.databases import fanout  # noqa: E402
from haiku_cli.databases.pool import DatabasePool  # noqa: E402
from haiku_cli.databases.selection import Selection  # noqa: E402
from haiku_cli.search.candidates import _POOL_REFINE_FACTOR, _REFINE_FACTOR, ann_ef, pool_ef  # noqa: E402
from haiku_cli.store import Location, open_database  # noqa: E402
from haiku_cli.store.indexes import VECTOR_INDEX  # noqa: E402
from haiku_cli.store.reads import async_table  # noqa: E402
from haiku_cli.store.schema import DOCUMENT_FIELDS, SPAN_FIELDS, TERMS_FIELD  # noqa: E402
from tests.support.hash_embedder import hash_vectors  # noqa: E402

KINDS = ("fts", "vector", "hybrid")
CORPORA = REPO / "benchmarks" / "corpora"  # gitignored: built once, reused
TARGET = 1.25
_SHOWN = ["id", "document_id", "text", "heading_path", "pages", *DOCUMENT_FIELDS.values(), *SPAN_FIELDS]


def layout(folder: Path, parts: int) -> list[Location]:
    """The databases holding the corpus split `parts` ways (1: the one database)."""
    if parts == 1:
        return [Location("one", str(folder / "one.lancedb"))]
    return [Location(f"part{i}", str(folder / f"split{parts}" / f"part{i}.lancedb")) for i in range(parts)]


def build(corpus: Corpus, folder: Path, size: int, parts: int) -> None:
    """Write the corpus split `parts` ways, unless it is there already."""
    docs = size // CHUNKS_PER_DOC
    for i, location in enumerate(layout(folder, parts)):
        path = Path(location.uri)
        if not path.exists():
            print(f"building {path}", file=sys.stderr, flush=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            bulk_build(corpus, path, list(range(i, docs, parts)) if parts > 1 else list(range(docs)))


class Bare:
    """The LanceDB queries of a search, with nothing around them."""

    def __init__(self, locations: list[Location]) -> None:
        dbs = [open_database(loc) for loc in locations]
        self.tables = [async_table(db.chunks) for db in dbs]
        self.rows = [db.chunks.count_rows() for db in dbs]
        self.indexed = [VECTOR_INDEX in {i.name for i in db.chunks.list_indices()} for db in dbs]

    async def search(self, kind: str, query: str, vector: np.ndarray) -> None:
        parts = len(self.tables)
        depth = fanout.candidate_depth(10, kind, parts)  # type: ignore[arg-type]
        rescoring = kind != "vector" and parts > 1
        jobs: list[Awaitable[Any]] = []
        for table, rows, indexed in zip(self.tables, self.rows, self.indexed, strict=True):
            if kind in ("vector", "hybrid"):
                q = table.query().nearest_to(vector).column("vector").distance_type("cosine")
                if indexed:
                    ef = (ann_ef if kind == "vector" else pool_ef)(rows, depth, parts)
                    q = q.refine_factor(_REFINE_FACTOR if kind == "vector" else _POOL_REFINE_FACTOR).ef(ef)
                jobs.append(q.select([*_SHOWN, "_distance"]).limit(depth).to_arrow())
            if kind in ("fts", "hybrid"):
                extra = ["vector"] * (kind == "hybrid") + [TERMS_FIELD] * rescoring
                q = table.query().nearest_to_text(query, columns="search_text")
                jobs.append(q.select([*_SHOWN, "_score", *extra]).limit(depth).to_arrow())
        await asyncio.gather(*jobs)


def _ratio(haiku: list[float], floor: list[float]) -> float:
    return statistics.median(haiku) / statistics.median(floor)


def _verdict(rounds: list[dict[str, tuple[list[float], list[float]]]], measure: int) -> dict:
    """The rounds' ratios of medians (haiku over floor), their median and min-max, and a bootstrap 90%
    interval over the paired queries of every round."""
    per_round = [_ratio(r["haiku"][measure], r["floor"][measure]) for r in rounds]
    haiku = np.array([x for r in rounds for x in r["haiku"][measure]])
    floor = np.array([x for r in rounds for x in r["floor"][measure]])
    rng = np.random.default_rng(0)
    picks = rng.integers(len(haiku), size=(1000, len(haiku)))
    boot = np.median(haiku[picks], axis=1) / np.median(floor[picks], axis=1)
    return {
        "ratio": round(statistics.median(per_round), 2),
        "rounds_min_max": [round(min(per_round), 2), round(max(per_round), 2)],
        "bootstrap_90": [round(float(np.percentile(boot, 5)), 2), round(float(np.percentile(boot, 95)), 2)],
        "haiku_p50_ms": round(float(np.median(haiku)) * 1000, 2),
        "floor_p50_ms": round(float(np.median(floor)) * 1000, 2),
    }


def measure(locations: list[Location], kinds: list[str], queries: list[str], rounds: int) -> dict:
    """Each kind's floor and haiku's search, query by query, back to back, over `rounds` rounds."""
    vectors = {q: hash_vectors([q], DIMENSION)[0] for q in queries}

    async def embed(q: str) -> np.ndarray:
        return vectors[q]

    pool, selection, bare = DatabasePool(), Selection(tuple(locations)), Bare(locations)
    young, *older = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_COLLECTION), *older)  # the threshold every `haiku` process runs with

    async def haiku(kind: str, q: str) -> None:
        await fanout.search_set(pool, selection, q, embed_query=embed, search_type=kind, limit=10)  # type: ignore[arg-type]

    calls: dict[str, Callable[[str, str], Awaitable[None]]] = {
        "floor": lambda kind, q: bare.search(kind, q, vectors[q]),
        "haiku": haiku,
    }

    async def run() -> dict:
        out: dict = {}
        for kind in kinds:
            for call in calls.values():  # warm: indexes loaded, statistics cached
                for q in queries:
                    await call(kind, q)
            # As haiku's long-lived hosts run (`haiku daemon`, `mcp`, `serve`): what the first searches
            # loaded is left out of later collections (store/heap.freeze_long_lived), for both sides.
            gc.collect()
            gc.freeze()
            samples = []
            for r in range(rounds):
                got: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in calls}
                for i, q in enumerate(queries):
                    names = ["floor", "haiku"] if (i + r) % 2 == 0 else ["haiku", "floor"]
                    for name in names:
                        c, w = time.process_time(), time.perf_counter()
                        await calls[name](kind, q)
                        got[name][1].append(time.perf_counter() - w)
                        got[name][0].append(time.process_time() - c)
                samples.append(got)
            out[kind] = {"cpu": _verdict(samples, 0), "wall": _verdict(samples, 1)}
        return out

    return asyncio.run(run())


def fanout_rows(table: Table, report: dict) -> None:
    """Per type and layout: haiku's CPU and wall over the floor's (median of the rounds, their spread)."""
    table.columns = ("type, databases", "CPU over the floor", "wall over the floor", "CPU p50, haiku / floor")
    table.comparison = (
        f"the bare concurrent LanceDB queries reading the same columns, paired query by query over "
        f"{report['rounds']} rounds (target {TARGET}x): median of the rounds, their min-max, bootstrap 90%"
    )
    for n, kinds in report["layouts"].items():
        for kind, got in kinds.items():
            cpu, wall = got["cpu"], got["wall"]
            table.add(
                f"{kind}, {n}",
                f"**{cpu['ratio']:.2f}x** ({cpu['rounds_min_max'][0]:.2f}-{cpu['rounds_min_max'][1]:.2f}; "
                f"{cpu['bootstrap_90'][0]:.2f}-{cpu['bootstrap_90'][1]:.2f})",
                f"{wall['ratio']:.2f}x ({wall['rounds_min_max'][0]:.2f}-{wall['rounds_min_max'][1]:.2f})",
                f"{cpu['haiku_p50_ms']} / {cpu['floor_p50_ms']} ms",
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=CORPORA, help="where built corpora are kept")
    parser.add_argument("--size", type=int, default=100_000, help="chunks in the corpus")
    parser.add_argument("--parts", default="1,2,4,8", help="layouts: 1 is the one database")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--build", action="store_true", help="write the layouts missing from --work first")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = args.work / str(args.size)
    parts = [int(p) for p in args.parts.split(",") if p]
    corpus = Corpus()
    if args.build:
        for n in parts:
            build(corpus, folder, args.size, n)
    rng = np.random.default_rng(args.size)  # the queries scale.py and query_path.py ask
    queries = [corpus.query(rng, args.size // CHUNKS_PER_DOC) for _ in range(args.queries)]
    kinds = args.kinds.split(",")
    report: dict = {
        "chunks": args.size,
        "queries": len(queries),
        "rounds": args.rounds,
        "target": TARGET,
        "cores": os.cpu_count(),
        "load_average_start": round(os.getloadavg()[0], 2),
        "layouts": {},
    }
    with result("fanout", "Fan-out over several databases") as table:
        for n in parts:
            report["layouts"][str(n)] = measure(layout(folder, n), kinds, queries, args.rounds)
            if not args.json:
                print(
                    f"{n} database(s): {json.dumps(report['layouts'][str(n)])}", file=sys.stderr, flush=True
                )
        fanout_rows(table, report)
    report["within_target"] = {
        f"{kind}/{n}": report["layouts"][str(n)][kind]["cpu"]["ratio"] <= TARGET
        for n in parts
        for kind in kinds
    }
    report["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
