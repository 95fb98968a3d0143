"""Cold open over an object store with latency: 1 database versus 8, concurrent versus sequential.

Databases that are not open yet are opened concurrently, so the first query should cost the slowest
open, not the sum. This builds 8 small databases in s3://bench on a local S3-compatible server
(moto) behind a proxy that adds a fixed round-trip time to every request, then times, each in a
fresh workspace (an empty pool):

- `pool.clients_covering` for 1 database, for all 8 (concurrent), and for the 8 one after another;
- a full hybrid `operations.search_hits` over 1 and over 8 (embedder loaded beforehand, pool cold), and
  the same search with the pool already open, which isolates the search's own round trips;
- the same opens against the server directly (no added latency), for comparison.

    python benchmarks/cold_open.py [--rtt-ms 50] [--repeats 7] [--by-type] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import anyio
from latency_proxy import S3WithLatency, measure_rtt

from haiku_cli.config.settings import DatabaseSettings, Settings
from haiku_cli.databases import operations
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.search.candidates import SearchType

N_DATABASES = 8
DOCS = [
    "Kestrels hover over open fields while hunting voles and other small mammals.",
    "Peregrine falcons stoop onto their prey at very great speed from a height.",
    "Barn owls hunt at night by sound, locating mice under grass and snow.",
]
QUERY = "birds of prey hunting small mammals"


def settings_for(storage_options: dict[str, str], n: int = N_DATABASES) -> Settings:
    """`db0..db{n-1}` in s3://bench, reached with the given storage options."""
    return Settings(
        databases={
            f"db{i}": DatabaseSettings(uri=f"s3://bench/db{i}.lancedb", storage_options=storage_options)
            for i in range(n)
        }
    )


async def build(settings: Settings) -> None:
    """Write a few documents into every database (concurrently: it is slow through the proxy)."""
    ws = Workspace(settings)
    _ = ws.embedder_spec()  # load the embedder once, before the writers share it

    async def fill(name: str) -> None:
        loc = ws.select_one([name])
        for i, text in enumerate(DOCS):
            await operations.add_text(ws, loc, f"{name}: {text}", title=f"{name} note {i}", metadata={})

    async with anyio.create_task_group() as tg:
        for name in settings.databases:
            tg.start_soon(fill, name)


Scenario = Callable[[Workspace, Selection], Awaitable[object]]


async def open_concurrently(ws: Workspace, sel: Selection) -> object:
    """The pool's rule: every cold database of the selection at once."""
    return await ws.pool.clients_covering(sel)


async def open_sequentially(ws: Workspace, sel: Selection) -> object:
    """What it would cost without concurrency: one database after another."""
    return [await ws.pool.clients_covering(Selection((loc,))) for loc in sel.locations]


async def search(ws: Workspace, sel: Selection, search_type: SearchType = "hybrid") -> object:
    """A full search (opens what is not open, candidates from each database, fusion, documents)."""
    hits = await operations.search_hits(ws, sel, QUERY, search_type=search_type)
    assert hits, "the benchmark databases returned no hits"
    return hits


async def search_after_sequential_open(ws: Workspace, sel: Selection) -> object:
    """The first query if the opens were sequential: open one by one, then search."""
    await open_sequentially(ws, sel)
    return await search(ws, sel)


@dataclass(frozen=True)
class Case:
    """One timed scenario: what runs, over which databases, and what is made ready beforehand."""

    run: Scenario
    names: list[str]
    embedder: bool = False  # load the embedder before the clock starts
    pool_open: bool = False  # open the selection before the clock starts (times the search alone)


async def time_case(settings: Settings, case: Case) -> float:
    """Seconds of one case in a fresh workspace (an empty pool)."""
    ws = Workspace(settings)
    sel = ws.select_many(case.names)
    if case.embedder:
        await ws.embed_query("warm up the embedder")
    if case.pool_open:
        await ws.pool.clients_covering(sel)
    start = time.perf_counter()
    await case.run(ws, sel)
    return time.perf_counter() - start


def summary(samples: list[float]) -> dict[str, float | list[float]]:
    """Median, min, max (seconds) and the raw samples."""
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "samples": [round(s, 4) for s in samples],
    }


async def measure(
    settings: Settings, repeats: int, *, with_search: bool, by_type: bool = False
) -> dict[str, dict]:
    """Every scenario `repeats` times, interleaved so that load changes hit all of them alike."""
    names = list(settings.databases)
    cases = {
        "open_1": Case(open_concurrently, names[:1]),
        "open_8_concurrent": Case(open_concurrently, names),
        "open_8_sequential": Case(open_sequentially, names),
    }
    if with_search:
        cases |= {
            "search_1": Case(search, names[:1], embedder=True),
            "search_8_concurrent": Case(search, names, embedder=True),
            "search_8_sequential_open": Case(search_after_sequential_open, names, embedder=True),
            "search_1_pool_open": Case(search, names[:1], embedder=True, pool_open=True),
            "search_8_pool_open": Case(search, names, embedder=True, pool_open=True),
        }
    if with_search and by_type:
        for t in ("vector", "fts"):
            run = partial(search, search_type=t)
            cases[f"search_1_pool_open_{t}"] = Case(run, names[:1], embedder=True, pool_open=True)
            cases[f"search_8_pool_open_{t}"] = Case(run, names, embedder=True, pool_open=True)
    samples: dict[str, list[float]] = {k: [] for k in cases}
    for r in range(repeats):
        order = list(cases)
        order = order[r % len(order) :] + order[: r % len(order)]
        for key in order:
            samples[key].append(await time_case(settings, cases[key]))
    out = {k: summary(v) for k, v in samples.items()}
    ratios = {}
    for kind in ("open", "search"):
        if f"{kind}_1" not in out:
            continue
        one = out[f"{kind}_1"]["median"]
        ratios[f"{kind}_8_concurrent/1"] = out[f"{kind}_8_concurrent"]["median"] / one
        seq = "open_8_sequential" if kind == "open" else "search_8_sequential_open"
        ratios[f"{kind}_8_sequential/1"] = out[seq]["median"] / one
    for suffix in ("", "_vector", "_fts"):
        if f"search_1_pool_open{suffix}" in out:
            one = out[f"search_1_pool_open{suffix}"]["median"]
            ratios[f"search_pool_open{suffix}_8/1"] = out[f"search_8_pool_open{suffix}"]["median"] / one
    return {"seconds": out, "ratios": ratios}


def print_block(title: str, result: dict[str, dict]) -> None:
    """Medians and ratios as a small table."""
    print(title)
    print(f"  {'scenario':30} {'median':>9} {'min':>9} {'max':>9}")
    for key, s in result["seconds"].items():
        print(f"  {key:30} {s['median'] * 1000:7.0f}ms {s['min'] * 1000:7.0f}ms {s['max'] * 1000:7.0f}ms")
    for key, ratio in result["ratios"].items():
        print(f"  ratio {key:28} {ratio:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt-ms", type=float, default=50.0, help="round-trip time the proxy adds")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--by-type", action="store_true", help="also time vector and fts searches with the pool open"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with S3WithLatency(rtt_ms=args.rtt_ms) as s3:
        delayed = settings_for(s3.storage_options(through_proxy=True))
        direct = settings_for(s3.storage_options(through_proxy=False))
        rtt = {"direct": measure_rtt(s3.direct), "proxy": measure_rtt(s3.proxy)}
        start = time.perf_counter()
        anyio.run(build, delayed)
        build_secs = time.perf_counter() - start
        with_latency = anyio.run(
            lambda: measure(delayed, args.repeats, with_search=True, by_type=args.by_type)
        )
        without = anyio.run(lambda: measure(direct, args.repeats, with_search=False))
    load = os.getloadavg()
    result = {
        "rtt_ms_added": args.rtt_ms,
        "measured_request_ms": {k: round(v * 1000, 1) for k, v in rtt.items()},
        "databases": N_DATABASES,
        "documents_per_database": len(DOCS),
        "repeats": args.repeats,
        "build_seconds": round(build_secs, 2),
        "with_latency": with_latency,
        "no_added_latency": without,
        "loadavg_1_5_15": [round(x, 2) for x in load],
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{N_DATABASES} databases x {len(DOCS)} documents on moto; one request: "
        f"{rtt['direct'] * 1000:.1f} ms direct, {rtt['proxy'] * 1000:.1f} ms through the proxy "
        f"(+{args.rtt_ms:g} ms RTT); built in {build_secs:.1f} s; medians of {args.repeats}"
    )
    print_block(f"with +{args.rtt_ms:g} ms per request:", with_latency)
    print_block("no added latency (direct to moto):", without)
    print(f"load average (1/5/15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
