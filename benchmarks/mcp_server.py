"""What serving through MCP costs: search per query via `haiku mcp` (stdio, HTTP) against the library.

All 1460 CISI documents in one database (built with `haiku add-src`, reused from --work), the 76 judged
queries. Per query and search type: `haiku_cli.api.search` on a warm workspace, and a `search` tool call
through the MCP SDK's client to a `haiku mcp` subprocess over stdio and over streamable HTTP on
127.0.0.1 (each server warmed first). Also the start-up: spawning `haiku mcp` to its first tool list.

    python benchmarks/mcp_server.py [--data ../shared/data/cisi] [--work DIR] [--passes 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from common import DEFAULT_DATA, load_beir
from latency import build_search_db, haiku_argv, percentile
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from haiku_cli import api

TYPES = ("fts", "hybrid")
Search = Callable[[str, str], Awaitable[object]]


async def sample(search: Search, queries: list[str], passes: int) -> dict[str, dict]:
    """Seconds per call for each type, types interleaved per query; after one warm-up call per type."""
    for t in TYPES:
        await search("warm up the pool and the embedder", t)
    samples: dict[str, list[float]] = {t: [] for t in TYPES}
    for p in range(passes):
        for i, text in enumerate(queries):
            order = TYPES if (i + p) % 2 == 0 else TYPES[::-1]
            for t in order:
                start = time.perf_counter()
                await search(text, t)
                samples[t].append(time.perf_counter() - start)
    return {
        t: {
            "p50_ms": round(percentile(s, 50) * 1000, 2),
            "p95_ms": round(percentile(s, 95) * 1000, 2),
            "mean_ms": round(statistics.fmean(s) * 1000, 2),
            "n": len(s),
        }
        for t, s in samples.items()
    }


async def library(config: Path, queries: list[str], passes: int) -> dict:
    ws = api.Workspace.load(config)
    selection = ws.select_many(["cisi"])
    return await sample(lambda q, t: api.search(ws, selection, q, search_type=t), queries, passes)


async def through(client: Client, queries: list[str], passes: int) -> dict:
    async def search(q: str, t: str) -> object:
        result = await client.call_tool("search", {"query": q, "type": t})
        if result.is_error:
            raise RuntimeError(result.content[0].text)
        return result

    return await sample(search, queries, passes)


def stdio_params(config: Path) -> StdioServerParameters:
    command, *args = haiku_argv()
    return StdioServerParameters(
        command=command, args=[*args, "mcp", "-d", "cisi"], env={**os.environ, "HAIKU_CONFIG": str(config)}
    )


async def stdio(config: Path, queries: list[str], passes: int) -> tuple[float, dict]:
    """Seconds from spawning `haiku mcp` to its first tool list, and the per-query samples."""
    start = time.perf_counter()
    async with Client(stdio_params(config)) as client:
        await client.list_tools()
        startup = time.perf_counter() - start
        return startup, await through(client, queries, passes)


def http(config: Path, queries: list[str], passes: int) -> dict:
    proc = subprocess.Popen(
        [*haiku_argv(), "mcp", "--http", "--port", "0", "-d", "cisi"],
        env={**os.environ, "HAIKU_CONFIG": str(config)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(180)
    try:
        url = line[0].strip()

        async def go() -> dict:
            async with Client(url) as client:
                return await through(client, queries, passes)

        return anyio.run(go)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def measure(args: argparse.Namespace, work: Path) -> dict:
    corpus, queries, _ = load_beir(args.data)
    texts = list(queries.values())
    config, build_secs = build_search_db(work, corpus)
    loads = [os.getloadavg()[0]]
    result: dict = {"cpus": os.cpu_count(), "documents": len(corpus), "queries": len(texts)}
    result["build_seconds"] = build_secs
    result["library"] = anyio.run(library, config, texts, args.passes)
    loads.append(os.getloadavg()[0])
    startup, result["stdio"] = anyio.run(stdio, config, texts, args.passes)
    result["stdio_startup_s"] = round(startup, 2)
    loads.append(os.getloadavg()[0])
    result["http"] = http(config, texts, args.passes)
    loads.append(os.getloadavg()[0])
    result["ratio_p50"] = {
        transport: {
            t: round(result[transport][t]["p50_ms"] / result["library"][t]["p50_ms"], 2) for t in TYPES
        }
        for transport in ("stdio", "http")
    }
    result["loadavg_1min_during"] = [round(x, 2) for x in loads]
    return result


def report(result: dict) -> None:
    print(f"search over {result['documents']} documents, {result['queries']} queries")
    print(
        f"  {'':8} {'library p50':>12} {'stdio p50':>10} {'http p50':>10} {'stdio/lib':>10} {'http/lib':>9}"
    )
    for t in TYPES:
        lib, sto, htp = (result[k][t]["p50_ms"] for k in ("library", "stdio", "http"))
        ratios = result["ratio_p50"]
        print(
            f"  {t:8} {lib:9.1f}ms {sto:9.1f}ms {htp:9.1f}ms "
            f"{ratios['stdio'][t]:11.2f} {ratios['http'][t]:11.2f}"
        )
    p95 = [f"{k} {t} {result[k][t]['p95_ms']:.1f}ms" for k in ("library", "stdio", "http") for t in TYPES]
    print("  p95: " + ", ".join(p95))
    print(f"start-up: spawn `haiku mcp` to first tool list {result['stdio_startup_s']:.2f} s")
    during = ", ".join(f"{x:.2f}" for x in result["loadavg_1min_during"])
    print(f"load average (1 min) during the run: {during} on {result['cpus']} CPUs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=None, help="keep the cisi database here (reused)")
    parser.add_argument("--passes", type=int, default=2, help="passes over the queries")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.work is None:
        with tempfile.TemporaryDirectory(prefix="haiku-mcp-") as tmp:
            result = measure(args, Path(tmp))
    else:
        args.work.mkdir(parents=True, exist_ok=True)
        result = measure(args, args.work)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)


if __name__ == "__main__":
    main()
