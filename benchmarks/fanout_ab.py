"""Two checkouts of haiku in one run: warm fan-out against the bare concurrent queries, query by query.

`fanout_floor.py` measures one checkout; comparing two runs of it on a shared machine compares two loads.
Here each checkout (`--before`, `--after`: a folder holding `haiku_cli`, e.g. a `git worktree` of the older
commit) answers in a worker process of its own, with its own warm pool, and the driver sends every query
to both in turn (the order rotating), each worker timing its floor (`fanout_floor.Bare`: the same LanceDB
queries, bare, gathered concurrently) and its `search_set` back to back. So before and after see the same
load, query by query, and each is set against a floor measured beside it. Wall and CPU (all threads of the
worker) p50/p95 per search; the machine's load average at the start and the end.

    python benchmarks/fanout_ab.py --before /tmp/haiku-before --size 100000 \\
        [--parts 2,4,8] [--kinds fts] [--queries 60] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.fanout_floor import CORPORA  # noqa: E402
from benchmarks.scale import CHUNKS_PER_DOC, QUERIES, Corpus  # noqa: E402

# Runs in each worker with its checkout first on sys.path, so `haiku_cli` (and the floor's helpers) are
# that checkout's; reads "kind<TAB>query" lines, answers one JSON line of seconds per line.
WORKER = r"""
import asyncio, json, sys, time
from pathlib import Path
checkout, folder, parts = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, checkout)
import haiku_cli
assert haiku_cli.__file__.startswith(checkout), haiku_cli.__file__
from benchmarks.fanout_floor import Bare, layout
from benchmarks.scale import DIMENSION
from haiku_cli.databases import fanout
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import Selection
from tests.support.hash_embedder import hash_vectors

locations = layout(folder, parts)
pool, selection, bare = DatabasePool(), Selection(tuple(locations)), Bare(locations)

async def serve():
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        kind, query = line.rstrip("\n").split("\t", 1)
        vector = hash_vectors([query], DIMENSION)[0]

        async def embed(_q):
            return vector

        out = {}
        for name in ("floor", "haiku"):
            w, c = time.perf_counter(), time.process_time()
            if name == "floor":
                await bare.search(kind, query, vector)
            else:
                await fanout.search_set(pool, selection, query, embed_query=embed, search_type=kind, limit=10)
            out[name] = [time.perf_counter() - w, time.process_time() - c]
        print(json.dumps(out), flush=True)

asyncio.run(serve())
"""


class Worker:
    """One checkout's worker process, asked one search at a time."""

    def __init__(self, checkout: Path, folder: Path, parts: int) -> None:
        argv = [sys.executable, "-c", WORKER, str(checkout), str(folder), str(parts)]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, kind: str, query: str) -> dict[str, list[float]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{kind}\t{query}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"a worker stopped (exit {self.proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _pct(values: list[float], p: float) -> float:
    return round(float(np.percentile(values, p)) * 1000, 2)


def measure(
    checkouts: dict[str, Path], folder: Path, parts: int, kinds: list[str], queries: list[str]
) -> dict:
    """Per kind and checkout: floor and haiku wall/CPU p50/p95, and haiku over its floor."""
    workers = {name: Worker(path, folder, parts) for name, path in checkouts.items()}
    try:
        out: dict = {}
        for kind in kinds:
            for worker in workers.values():  # warm: indexes loaded, the first statistics read
                for q in queries[:3]:
                    worker.ask(kind, q)
            samples = {name: {"floor": ([], []), "haiku": ([], [])} for name in workers}
            names = list(workers)
            for i, q in enumerate(queries):
                for name in names[i % len(names) :] + names[: i % len(names)]:
                    for call, (wall, cpu) in workers[name].ask(kind, q).items():
                        samples[name][call][0].append(wall)
                        samples[name][call][1].append(cpu)
            out[kind] = {}
            for name, calls in samples.items():
                row = {
                    call: {
                        "wall_p50_ms": _pct(wall, 50),
                        "wall_p95_ms": _pct(wall, 95),
                        "cpu_p50_ms": _pct(cpu, 50),
                        "cpu_p95_ms": _pct(cpu, 95),
                    }
                    for call, (wall, cpu) in calls.items()
                }
                row["haiku_over_floor"] = {
                    k: round(row["haiku"][k] / row["floor"][k], 2) for k in ("wall_p50_ms", "cpu_p50_ms")
                }
                out[kind][name] = row
        return out
    finally:
        for worker in workers.values():
            worker.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the older haiku")
    parser.add_argument("--after", type=Path, default=REPO, help="the newer (default: this one)")
    parser.add_argument("--work", type=Path, default=CORPORA, help="where built corpora are kept")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--parts", default="2,4,8", help="layouts (fanout_floor.py --build writes them)")
    parser.add_argument("--kinds", default="fts")
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.size)  # the queries scale.py, query_path.py and fanout_floor.py ask
    corpus = Corpus()
    queries = [corpus.query(rng, args.size // CHUNKS_PER_DOC) for _ in range(args.queries)]
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    report: dict = {"chunks": args.size, "load_average_start": round(os.getloadavg()[0], 2), "layouts": {}}
    for n in (int(p) for p in args.parts.split(",") if p):
        found = measure(checkouts, args.work / str(args.size), n, args.kinds.split(","), queries)
        report["layouts"][str(n)] = found
        if not args.json:
            for kind, by_checkout in found.items():
                for name, row in by_checkout.items():
                    f, h, r = row["floor"], row["haiku"], row["haiku_over_floor"]
                    print(
                        f"{n} dbs {kind:6} {name:6} floor wall/cpu p50 {f['wall_p50_ms']:6.2f} / "
                        f"{f['cpu_p50_ms']:6.2f}  haiku p50 {h['wall_p50_ms']:6.2f} / {h['cpu_p50_ms']:6.2f}"
                        f"  p95 {h['wall_p95_ms']:6.2f} / {h['cpu_p95_ms']:6.2f}"
                        f"  haiku/floor {r['wall_p50_ms']:.2f} / {r['cpu_p50_ms']:.2f}",
                        file=sys.stderr,
                        flush=True,
                    )
    report["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
