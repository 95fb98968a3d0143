"""Warm fan-out in wall time: `search_set` over 1, 2, 4 and 8 databases against the bare concurrent queries.

On `scale.py`'s corpus (its `SIZE/one.lancedb`, and the same corpus split over N databases, which
`--build` writes as `SIZE/splitN/partI.lancedb` with scale.py's bulk builder; `SIZE/part0..3` serve for
4), per search type and layout, query by query and interleaved (so both see the same load):

- `floor`: the LanceDB queries a search of that type asks every database, bare, gathered concurrently on
  one event loop with no haiku code around them: as deep, with the same search breadth, and with the
  columns a search read before hits were read alone (what a hit shows, the text set-wide BM25 analyses
  where it rescores, the vectors hybrid scores full-text hits by);
- `haiku`: `fanout.search_set` on a warm pool, the query vector precomputed (embedding excluded).

Reports wall and CPU (all threads of the process) p50/p95 per query, haiku over the floor (the target:
<= 1.25 for a split), and each layout over one database. The machine is shared: say the load.

    python benchmarks/fanout_wall.py --work /tmp/haiku-scale --size 100000 --build [--parts 2,4,8] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
from haiku_cli.databases import fanout  # noqa: E402
from haiku_cli.databases.pool import DatabasePool  # noqa: E402
from haiku_cli.databases.selection import Selection  # noqa: E402
from haiku_cli.search.candidates import _POOL_REFINE_FACTOR, _REFINE_FACTOR, ann_ef, pool_ef  # noqa: E402
from haiku_cli.store import Location, open_database  # noqa: E402
from haiku_cli.store.indexes import VECTOR_INDEX  # noqa: E402
from haiku_cli.store.reads import async_table  # noqa: E402
from haiku_cli.store.schema import DOCUMENT_FIELDS, SPAN_FIELDS  # noqa: E402
from tests.support.hash_embedder import hash_vectors  # noqa: E402

KINDS = ("fts", "vector", "hybrid")
_SHOWN = ["id", "document_id", "text", "heading_path", "pages", *DOCUMENT_FIELDS.values(), *SPAN_FIELDS]


def layout(folder: Path, parts: int) -> list[Location]:
    """The databases holding the corpus split `parts` ways (1: the one database)."""
    if parts == 1:
        return [Location("one", str(folder / "one.lancedb"))]
    if parts == 4 and (folder / "part0.lancedb").exists():
        return [Location(f"part{i}", str(folder / f"part{i}.lancedb")) for i in range(4)]
    return [Location(f"part{i}", str(folder / f"split{parts}" / f"part{i}.lancedb")) for i in range(parts)]


def build(corpus: Corpus, folder: Path, size: int, parts: int) -> None:
    """Write the corpus split `parts` ways, as scale.py splits it over 4 (document i to part i % parts)."""
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
                extra = ["vector"] * (kind == "hybrid") + ["search_text"] * rescoring
                q = table.query().nearest_to_text(query, columns="search_text")
                jobs.append(q.select([*_SHOWN, "_score", *extra]).limit(depth).to_arrow())
        await asyncio.gather(*jobs)


def _pct(values: list[float], p: float) -> float:
    return round(float(np.percentile(values, p)) * 1000, 2)


def _summary(wall: list[float], cpu: list[float]) -> dict:
    return {
        "wall_p50_ms": _pct(wall, 50),
        "wall_p95_ms": _pct(wall, 95),
        "cpu_p50_ms": _pct(cpu, 50),
        "cpu_p95_ms": _pct(cpu, 95),
    }


def measure(locations: list[Location], kinds: list[str], queries: list[str], rounds: int) -> dict:
    """Each kind's floor and haiku's search, query by query, alternating."""
    vectors = {q: hash_vectors([q], DIMENSION)[0] for q in queries}

    async def embed(q: str) -> np.ndarray:
        return vectors[q]

    pool, selection, bare = DatabasePool(), Selection(tuple(locations)), Bare(locations)

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
                for q in queries[:3]:
                    await call(kind, q)
            samples: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in calls}
            for _ in range(rounds):
                for q in queries:
                    for name, call in calls.items():
                        w, c = time.perf_counter(), time.process_time()
                        await call(kind, q)
                        samples[name][0].append(time.perf_counter() - w)
                        samples[name][1].append(time.process_time() - c)
            out[kind] = {name: _summary(*samples[name]) for name in calls}
            floor, ours = out[kind]["floor"], out[kind]["haiku"]
            out[kind]["haiku_over_floor"] = {
                k: round(ours[k] / floor[k], 2) for k in ("wall_p50_ms", "cpu_p50_ms") if floor[k]
            }
        return out

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/haiku-scale"), help="scale.py's --work")
    parser.add_argument("--size", type=int, default=100_000, help="a chunk count scale.py built there")
    parser.add_argument("--parts", default="2,4,8", help="splits to compare with one database")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--build", action="store_true", help="write the splits missing from --work first")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with result("fanout", "Fan-out over several databases") as table:
        fanout_rows(table, run(args))


def fanout_rows(table: Table, report: dict) -> None:
    """Per type and layout: haiku's warm wall p50 over the bare queries' (the floor), and over one."""
    table.columns = (
        "type, databases",
        "wall p50 (CPU p50)",
        "the floor's wall p50",
        "over the floor",
        "over one",
    )
    table.comparison = "the bare concurrent LanceDB queries (target 1.25x for a split)"
    for n, kinds in report["layouts"].items():
        for kind, got in kinds.items():
            ours, floor = got["haiku"], got["floor"]
            table.add(
                f"{kind}, {n}",
                f"{ours['wall_p50_ms']} ms ({ours['cpu_p50_ms']} ms)",
                f"{floor['wall_p50_ms']} ms",
                f"{got['haiku_over_floor'].get('wall_p50_ms', '')}x",
                f"{got['haiku_split_over_one']['wall_p50_ms']}x" if "haiku_split_over_one" in got else "",
            )


def run(args: argparse.Namespace) -> dict:
    folder = args.work / str(args.size)
    parts = [1, *(int(p) for p in args.parts.split(",") if p)]
    corpus = Corpus()
    if args.build:
        for n in parts:
            build(corpus, folder, args.size, n)
    rng = np.random.default_rng(args.size)  # the queries scale.py and query_path.py ask
    queries = [corpus.query(rng, args.size // CHUNKS_PER_DOC) for _ in range(args.queries)]
    kinds = args.kinds.split(",")
    report: dict = {"chunks": args.size, "load_average_start": round(os.getloadavg()[0], 2), "layouts": {}}
    for n in parts:
        report["layouts"][str(n)] = measure(layout(folder, n), kinds, queries, args.rounds)
        if not args.json:
            print(f"{n} database(s): {json.dumps(report['layouts'][str(n)])}", file=sys.stderr, flush=True)
    one = report["layouts"]["1"]
    for n in parts[1:]:
        split = report["layouts"][str(n)]
        for kind in kinds:
            split[kind]["haiku_split_over_one"] = {
                k: round(split[kind]["haiku"][k] / one[kind]["haiku"][k], 2)
                for k in ("wall_p50_ms", "cpu_p50_ms")
            }
    report["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
