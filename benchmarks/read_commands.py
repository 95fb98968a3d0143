"""What `list`, `get`, `info` and `history` cost once the database is open: each command's library call
(`databases.operations`) repeated on a warm workspace, wall and CPU time per call, medians.

The cold start of the same commands is `latency.py --parts cold` (`cold_start.py`); this isolates their
reads from the interpreter's start and LanceDB's import. Run it against another source tree with
PYTHONPATH=TREE to compare (the calls are the same in both).

    python benchmarks/read_commands.py --db PATH [--rounds 50] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.store.location import Location


async def _measure(db: Path, rounds: int) -> dict[str, dict[str, float]]:
    ws = Workspace.load(None)
    location = Location.from_path(db)
    first = (await operations.list_documents(ws, location, limit=1)).documents[0].id
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "list --limit 50": lambda: operations.list_documents(ws, location),
        "get ID": lambda: operations.get_document(ws, location, first),
        "get PREFIX": lambda: operations.get_document(ws, location, first[:8]),
        "info": lambda: operations.info(ws, location),
        "history": lambda: operations.history(ws, location),
    }
    walls: dict[str, list[float]] = {k: [] for k in calls}
    cpus: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(rounds):
        for name, call in calls.items():  # alternating, so load hits every call alike
            w, c = time.perf_counter(), time.process_time()
            await call()
            walls[name].append(time.perf_counter() - w)
            cpus[name].append(time.process_time() - c)
    return {
        k: {
            "wall_ms": round(statistics.median(walls[k]) * 1000, 2),
            "cpu_ms": round(statistics.median(cpus[k]) * 1000, 2),
        }
        for k in calls
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="a haiku database folder")
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = anyio.run(_measure, args.db, args.rounds)
    result = {
        "rows": rows,
        "rounds": args.rounds,
        "loadavg_1min": [round(load, 2), round(os.getloadavg()[0], 2)],
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, row in rows.items():
        print(f"{name:18} wall {row['wall_ms']:7.2f} ms  cpu {row['cpu_ms']:7.2f} ms")
    print(f"load average (1 min) before and after: {result['loadavg_1min']}")


if __name__ == "__main__":
    main()
