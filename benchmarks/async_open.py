"""What reaching a search's async chunks table costs: LanceDB's private `_table` behind the sync table (what
`store.reads.async_table` does) against LanceDB's public async API (`lancedb.connect_async`, then
`AsyncConnection.open_table` and a checkout of the version the handle reads).

Each round opens the database cold (`open_database`, as a search's first query of it does), reaches its
async chunks table one way, reads its version, then runs one full-text query through it; the two ways
alternate round by round so both see the same load. Wall and CPU time (all threads) per step, medians.

    python benchmarks/async_open.py [--rounds 30] [--docs 200] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import lancedb  # noqa: E402

from haiku_cli.store import Database, EmbedderSpec, Location, open_database  # noqa: E402
from haiku_cli.store.document_writes import write_documents  # noqa: E402
from haiku_cli.store.reads import async_table  # noqa: E402
from tests.store.test_document_writes import _write  # noqa: E402


async def _private(db: Database) -> Any:
    return async_table(db.chunks)


async def _public(db: Database) -> Any:
    conn = await lancedb.connect_async(db.location.connect_uri, storage_options=db.location.storage_options)
    table = await conn.open_table(db.chunks_table_name)
    await table.checkout(db.chunks.version)  # the version the handle reads, as `_table` is
    return table


async def _round(location: Location, reach) -> tuple[float, float, float, float]:
    db = open_database(location)
    w0, c0 = time.perf_counter(), time.process_time()
    table = await reach(db)
    await table.version()
    w1, c1 = time.perf_counter(), time.process_time()
    q = table.query().nearest_to_text("rivers", columns="search_text").select(["_score"]).limit(10)
    await q.to_arrow()
    w2, c2 = time.perf_counter(), time.process_time()
    return w1 - w0, c1 - c0, w2 - w1, c2 - c1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        location = Location("bench", str(Path(tmp) / "bench.lancedb"))
        db = open_database(location, create_with=EmbedderSpec("test:e", 4), writable=True)
        write_documents(db, [_write(f"Rivers carry sediment {i}") for i in range(args.docs)])
        ways = {"private _table": _private, "public connect_async": _public}
        samples: dict[str, list[tuple[float, ...]]] = {name: [] for name in ways}
        for reach in ways.values():  # warm-up: the first query of a process loads the index
            asyncio.run(_round(location, reach))
        for _ in range(args.rounds):
            for name, reach in ways.items():
                samples[name].append(asyncio.run(_round(location, reach)))
    out: dict[str, Any] = {"rounds": args.rounds, "docs": args.docs, "load_average": os.getloadavg()[0]}
    for name, rows in samples.items():
        columns = list(zip(*rows, strict=True))
        out[name] = {
            key: round(statistics.median(values) * 1000, 3)
            for key, values in zip(
                ("reach_ms", "reach_cpu_ms", "query_ms", "query_cpu_ms"), columns, strict=True
            )
        }
    private, public = out["private _table"], out["public connect_async"]
    out["public_over_private_query"] = round(public["query_ms"] / private["query_ms"], 2)
    out["public_reach_extra_ms"] = round(public["reach_ms"] - private["reach_ms"], 3)
    if args.json:
        print(json.dumps(out))
        return
    for key, value in out.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
