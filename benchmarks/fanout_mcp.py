"""Warm fan-out through `haiku mcp` over stdio: search calls over one database against the same corpus split.

On `scale.py`'s corpus as `fanout_floor.py --build` lays it out (`SIZE/one.lancedb` and
`SIZE/splitN/partI.lancedb`), one `haiku mcp` server on stdio has every one of those databases in
scope and the official MCP Python SDK's client (`mcp.Client`) calls its `search` tool, narrowed by the
`databases` argument to one layout at a time; query vectors come from the hashing embedder that built the
corpus, served on 127.0.0.1 (so vector and hybrid calls include the server's request for the query's
vector). Per search type, query by query, the layouts alternate (rotated per query), so all see the same
load. Each call is timed from the client's send to its parsed result (wall), and by the CPU the server
process spent on it (every thread of it, from `/proc/PID/task/*/schedstat`, nanoseconds). Reports p50/p95
of both, and each split over one database. The machine is shared: the load average is reported.

    python benchmarks/fanout_mcp.py --size 100000 [--parts 2,4,8] [--queries 60]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio
import numpy as np
from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.fanout_floor import CORPORA, layout  # noqa: E402
from benchmarks.scale import CHUNKS_PER_DOC, DIMENSION, EMBEDDER, QUERIES, Corpus  # noqa: E402
from tests.support.hash_embedder import serve_hash_embedder  # noqa: E402

KINDS = ("fts", "vector", "hybrid")
LAUNCH = "import sys; from haiku_cli.cli.app import main; sys.argv[0] = 'haiku'; sys.exit(main())"


def _names(folder: Path, parts: list[int]) -> dict[int, dict[str, str]]:
    """Each layout's databases by a name unique across layouts (one server holds them all)."""
    out = {}
    for n in parts:
        locations = layout(folder, n)
        missing = [loc.uri for loc in locations if not Path(loc.uri).exists()]
        if missing:
            raise SystemExit(f"not built: {missing[0]} (fanout_floor.py --build writes the splits)")
        out[n] = {("one" if n == 1 else f"s{n}_{i}"): loc.uri for i, loc in enumerate(locations)}
    return out


def _config(path: Path, url: str, layouts: dict[int, dict[str, str]]) -> Path:
    lines = "".join(f'{name} = "{uri}"\n' for dbs in layouts.values() for name, uri in dbs.items())
    path.write_text(f'[embedder]\nmodel = "{EMBEDDER}"\nbase_url = "{url}"\n\n[databases]\n{lines}')
    return path


def _server_pid() -> int:
    """The `haiku mcp` process the client spawned: this process's only child."""
    me, children = os.getpid(), []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text() if proc.name.isdigit() else ""
        except OSError:
            continue  # ended meanwhile, or not ours to read
        # Fields after the command name, which may hold spaces: state, then the parent's id.
        if stat and int(stat.rsplit(")", 1)[1].split()[1]) == me:
            children.append(int(proc.name))
    if len(children) != 1:
        raise SystemExit(f"expected one child process (the server), found {children}")
    return children[0]


def _cpu_ns(pid: int) -> int:
    """CPU time every thread of `pid` has run so far, in nanoseconds (schedstat's first field)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
            total += int((task / "schedstat").read_text().split()[0])
    return total


def _pct(values: list[float], p: float) -> float:
    return round(float(np.percentile(values, p)) * 1000, 2)


async def _measure(
    params: StdioServerParameters, layouts: dict, kinds: list[str], queries: list[str]
) -> dict:
    async with Client(params) as client:
        await client.list_tools()
        pid = _server_pid()

        async def call(kind: str, names: list[str], q: str) -> tuple[float, float]:
            w, c = time.perf_counter(), _cpu_ns(pid)
            result = await client.call_tool("search", {"query": q, "type": kind, "databases": names})
            wall, cpu = time.perf_counter() - w, (_cpu_ns(pid) - c) / 1e9
            if result.is_error:
                raise SystemExit(f"{kind} over {names[0]}...: {result.content[0].text}")
            return wall, cpu

        report: dict = {}
        for kind in kinds:
            for dbs in layouts.values():  # warm: each database opened, its indexes loaded
                for q in queries[:3]:
                    await call(kind, list(dbs), q)
            samples: dict[int, tuple[list[float], list[float]]] = {n: ([], []) for n in layouts}
            order = list(layouts)
            for i, q in enumerate(queries):
                for n in order[i % len(order) :] + order[: i % len(order)]:
                    wall, cpu = await call(kind, list(layouts[n]), q)
                    samples[n][0].append(wall)
                    samples[n][1].append(cpu)
            report[kind] = {
                str(n): {
                    "wall_p50_ms": _pct(wall, 50),
                    "wall_p95_ms": _pct(wall, 95),
                    "server_cpu_p50_ms": _pct(cpu, 50),
                    "server_cpu_p95_ms": _pct(cpu, 95),
                }
                for n, (wall, cpu) in samples.items()
            }
            one = report[kind]["1"]
            for n in order[1:]:
                split = report[kind][str(n)]
                split["split_over_one"] = {
                    k: round(split[k] / one[k], 2) for k in ("wall_p50_ms", "server_cpu_p50_ms")
                }
        return report


def measure(folder: Path, parts: list[int], kinds: list[str], queries: list[str]) -> dict:
    """Per kind and layout, wall and server CPU p50/p95 of `search` tool calls through `haiku mcp`."""
    layouts = _names(folder, parts)
    with serve_hash_embedder(DIMENSION) as url, tempfile.TemporaryDirectory() as tmp:
        config = _config(Path(tmp) / "haiku.toml", url, layouts)
        env = {**os.environ, "HAIKU_CONFIG": str(config), "PYTHONPATH": str(REPO)}
        params = StdioServerParameters(command=sys.executable, args=["-c", LAUNCH, "mcp"], env=env)
        return anyio.run(_measure, params, layouts, kinds, queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=CORPORA, help="where built corpora are kept")
    parser.add_argument("--size", type=int, default=100_000, help="a chunk count built there")
    parser.add_argument("--parts", default="2,4,8", help="splits to compare with one database")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.size)  # the queries scale.py, query_path.py and fanout_floor.py ask
    corpus = Corpus()
    queries = [corpus.query(rng, args.size // CHUNKS_PER_DOC) for _ in range(args.queries)]
    parts = [1, *(int(p) for p in args.parts.split(",") if p)]
    report: dict = {"chunks": args.size, "load_average_start": round(os.getloadavg()[0], 2)}
    report["kinds"] = measure(args.work / str(args.size), parts, args.kinds.split(","), queries)
    report["load_average_end"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(report))
        return
    print(f"{args.size:,} chunks, {len(queries)} queries, through `haiku mcp` (stdio), ms")
    head = f"{'':8} {'dbs':>3} {'wall p50':>9} {'p95':>7} {'cpu p50':>8} {'p95':>7}"
    print(f"{head} {'split/one wall, cpu':>20}")
    for kind, by_layout in report["kinds"].items():
        for n, row in by_layout.items():
            ratio = row.get("split_over_one")
            ratios = f"{ratio['wall_p50_ms']:.2f}, {ratio['server_cpu_p50_ms']:.2f}" if ratio else "-"
            print(
                f"{kind:8} {n:>3} {row['wall_p50_ms']:9.1f} {row['wall_p95_ms']:7.1f} "
                f"{row['server_cpu_p50_ms']:8.1f} {row['server_cpu_p95_ms']:7.1f} {ratios:>20}"
            )
    start, end = report["load_average_start"], report["load_average_end"]
    print(f"load average (1 min): {start} at the start, {end} at the end")


if __name__ == "__main__":
    main()
