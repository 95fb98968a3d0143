"""The floor under a fan-out: what the LanceDB calls of a full-text search cost, one database vs the split.

On the databases `benchmarks/scale.py` leaves (`SIZE/one.lancedb` and `SIZE/part0..3.lancedb`), it times
(1) each LanceDB call a full-text search makes on one part, alone, and (2) the bare full-text queries of
a whole search (per database the query for as many candidates as a search of 10 asks, with the columns
it reads, which in the current layout include each chunk's copy of its document's fields: no document
lookup) gathered
concurrently in one coroutine on one event loop, with none of haiku's Python around them, beside (3)
`fanout.search_set` itself, and (0) only the full-text queries for scores, with no column read. (2) is
what no change to haiku's own code can go below while every database answers its own query: the
split's (2) over one database's (2) is the fan-out ratio's floor for full text, and (3) over (2) is what
haiku adds to it (set-wide BM25's analyzer call included: that is haiku's work, timed alone in (1)).

    python benchmarks/fanout_floor.py --work /tmp/haiku-scale --size 100000 [--queries 120] [--json]
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

from benchmarks.scale import CHUNKS_PER_DOC, QUERIES, SPLIT, Corpus  # noqa: E402
from haiku_cli.databases import fanout  # noqa: E402
from haiku_cli.databases.pool import DatabasePool  # noqa: E402
from haiku_cli.databases.selection import Selection  # noqa: E402
from haiku_cli.store import Location, open_database  # noqa: E402
from haiku_cli.store.indexes import FTS_INDEX  # noqa: E402
from haiku_cli.store.reads import async_table  # noqa: E402
from haiku_cli.store.schema import DOCUMENT_FIELDS, SPAN_FIELDS  # noqa: E402

# What a search of the current layout reads per full-text candidate (candidates.CandidateQuery): the
# hit's own columns, its copy of its document's fields, its place, and on a split the text to rescore.
_HIT_COLUMNS = ["id", "document_id", "text", "heading_path", "pages", *DOCUMENT_FIELDS.values(), *SPAN_FIELDS]
_COLUMNS = [*_HIT_COLUMNS, "_score", "search_text"]
_SEPARATOR = " zzhaikutextbreakzz "


def _timed(run: Callable[[int], Any], n: int) -> dict:
    run(0)  # warm: indexes loaded, caches filled
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        run(i)
    return {
        "wall_ms": round((time.perf_counter() - wall) / n * 1000, 2),
        "cpu_ms": round((time.process_time() - cpu) / n * 1000, 2),
    }


def _tables(locations: list[Location]) -> tuple[list[Any], Callable[[Awaitable[Any]], Any]]:
    chunks = []
    for location in locations:
        db = open_database(location)
        # Only columns the table has: a database scale.py built before a layout step lacks the newest.
        missing = set(_COLUMNS) - set(db.chunks.schema.names) - {"_score"}
        if missing:
            raise SystemExit(f"{location.uri}: built in an older layout (no {sorted(missing)}): rebuild it")
        chunks.append(async_table(db.chunks))
    # One event loop for every measurement, as a search awaits LanceDB on the caller's loop.
    return chunks, asyncio.new_event_loop().run_until_complete


def per_call(location: Location, queries: list[str], n: int) -> dict:
    """Each LanceDB call of a full-text search on one database, alone."""
    (table,), run = _tables([location])
    first = run(
        table.query().nearest_to_text(queries[0], columns="search_text").select(_COLUMNS).limit(30).to_arrow()
    )
    texts = _SEPARATOR.join(first.column("search_text").to_pylist())
    calls: dict[str, Callable[[str], Awaitable[Any]]] = {
        "count_rows": lambda q: table.count_rows(),
        "list_indices": lambda q: table.list_indices(),
        "fts_30_with_columns": lambda q: (
            table.query().nearest_to_text(q, columns="search_text").select(_COLUMNS).limit(30).to_arrow()
        ),
        "fts_30_id_and_score": lambda q: (
            table.query()
            .nearest_to_text(q, columns="search_text")
            .select(["id", "_score"])
            .limit(30)
            .to_arrow()
        ),
        "analyze_30_texts": lambda q: table.tokenize(texts, index_name=FTS_INDEX),
    }
    return {
        name: _timed(lambda i, c=call: run(c(queries[i % len(queries)])), n) for name, call in calls.items()
    }


def bare_search(locations: list[Location], queries: list[str], n: int) -> dict:
    """The full-text queries of a whole search over `locations`, gathered concurrently in one coroutine.

    Only the queries: a search of the current layout looks no document up (its chunks carry their
    documents' fields), and set-wide rescoring is haiku's own work, not part of the floor.
    """
    chunks, run = _tables(locations)
    # As deep as a search of 10 asks each database (10 alone, 3 x 10 where the set rescores), and the
    # text BM25 scored only where it is rescored: over several databases.
    depth = fanout.candidate_depth(10, "fts", len(chunks))
    columns = _COLUMNS if len(chunks) > 1 else [c for c in _COLUMNS if c != "search_text"]

    async def search(query: str) -> None:
        asks = [t.query().nearest_to_text(query, columns="search_text").select(columns) for t in chunks]
        await asyncio.gather(*(ask.limit(depth).to_arrow() for ask in asks))

    return _timed(lambda i: run(search(queries[i % len(queries)])), n)


def scores_only(locations: list[Location], queries: list[str], n: int) -> dict:
    """Only each database's full-text query for its candidates' scores, gathered: no column, no rescoring.

    No full-text search of the set can cost less while each database answers its own query.
    """
    chunks, run = _tables(locations)
    depth = fanout.candidate_depth(10, "fts", len(chunks))

    async def search(query: str) -> None:
        asks = [t.query().nearest_to_text(query, columns="search_text").select(["_score"]) for t in chunks]
        await asyncio.gather(*(ask.limit(depth).to_arrow() for ask in asks))

    return _timed(lambda i: run(search(queries[i % len(queries)])), n)


def haiku_search(locations: list[Location], queries: list[str], n: int) -> dict:
    """`fanout.search_set` with --type fts on a warm pool."""
    pool = DatabasePool()
    selection = Selection(tuple(locations))

    async def many(count: int, offset: int) -> None:
        for i in range(count):
            q = queries[(offset + i) % len(queries)]
            await fanout.search_set(pool, selection, q, embed_query=None, search_type="fts", limit=10)

    asyncio.run(many(1, 0))
    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(many(n, 0))
    return {
        "wall_ms": round((time.perf_counter() - wall) / n * 1000, 2),
        "cpu_ms": round((time.process_time() - cpu) / n * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/haiku-scale"), help="scale.py's --work")
    parser.add_argument("--size", type=int, default=100_000, help="a chunk count already built there")
    parser.add_argument("--queries", type=int, default=120, help="queries per measurement")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = args.work / str(args.size)
    one = [Location("one", str(folder / "one.lancedb"))]
    split = [Location(f"part{i}", str(folder / f"part{i}.lancedb")) for i in range(SPLIT)]
    rng = np.random.default_rng(args.size)  # the queries scale.py and query_path.py ask
    corpus = Corpus()
    queries = [corpus.query(rng, args.size // CHUNKS_PER_DOC) for _ in range(QUERIES)]
    report: dict = {"chunks": args.size, "load_average": round(os.getloadavg()[0], 2)}
    report["per_call_one_part"] = per_call(split[0], queries, args.queries)
    for name, run in (
        ("scores_only", scores_only),
        ("bare_lancedb_calls", bare_search),
        ("haiku_search_set", haiku_search),
    ):
        report[name] = {"one": run(one, queries, args.queries), "split": run(split, queries, args.queries)}
        one_ms, split_ms = report[name]["one"], report[name]["split"]
        report[name]["split_over_one"] = {
            k: round(split_ms[k] / one_ms[k], 2) for k in ("wall_ms", "cpu_ms") if one_ms[k]
        }
    # What haiku adds to the floor: the target is a split search within 1.25x of it.
    report["haiku_over_floor"] = {
        layout: round(
            report["haiku_search_set"][layout]["wall_ms"] / report["bare_lancedb_calls"][layout]["wall_ms"], 2
        )
        for layout in ("one", "split")
    }
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
