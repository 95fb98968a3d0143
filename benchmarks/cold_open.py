"""Cold open over an object store with latency: 1 database versus 8, concurrent versus sequential.

Databases that are not open yet are opened concurrently, so the first query should cost the slowest
open, not the sum. This builds 8 small databases in s3://bench on a local S3-compatible server
(moto) behind a proxy that adds a fixed round-trip time to every request, then times, each in a
fresh workspace (an empty pool):

- `pool.clients_covering` for 1 database, for all 8 (concurrent), and for the 8 one after another;
- a full hybrid `operations.search` over 1 and over 8 (embedder loaded beforehand, pool cold);
- the same opens against the server directly (no added latency), for comparison.

    python benchmarks/cold_open.py [--rtt-ms 50] [--repeats 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable

import anyio
from latency_proxy import S3WithLatency, measure_rtt

from haiku_cli.config.settings import DatabaseSettings, Settings
from haiku_cli.databases import operations
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace

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


async def search(ws: Workspace, sel: Selection) -> object:
    """A full hybrid search on a cold pool (opens, candidates from each database, fusion, documents)."""
    hits = await operations.search(ws, sel, QUERY, search_type="hybrid")
    assert hits, "the benchmark databases returned no hits"
    return hits


async def search_after_sequential_open(ws: Workspace, sel: Selection) -> object:
    """The first query if the opens were sequential: open one by one, then search."""
    await open_sequentially(ws, sel)
    return await search(ws, sel)


async def time_cold(
    settings: Settings, scenario: Scenario, names: list[str], *, needs_embedder: bool
) -> float:
    """Seconds of one scenario in a fresh workspace; the embedder is loaded before the clock starts."""
    ws = Workspace(settings)
    if needs_embedder:
        await ws.embed_query("warm up the embedder")
    sel = ws.select_many(names)
    start = time.perf_counter()
    await scenario(ws, sel)
    return time.perf_counter() - start


def summary(samples: list[float]) -> dict[str, float | list[float]]:
    """Median, min, max (seconds) and the raw samples."""
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "samples": [round(s, 4) for s in samples],
    }


async def measure(settings: Settings, repeats: int, *, with_search: bool) -> dict[str, dict]:
    """Every scenario `repeats` times, interleaved so that load changes hit all of them alike."""
    names = list(settings.databases)
    scenarios: dict[str, tuple[Scenario, list[str], bool]] = {
        "open_1": (open_concurrently, names[:1], False),
        "open_8_concurrent": (open_concurrently, names, False),
        "open_8_sequential": (open_sequentially, names, False),
    }
    if with_search:
        scenarios |= {
            "search_1": (search, names[:1], True),
            "search_8_concurrent": (search, names, True),
            "search_8_sequential_open": (search_after_sequential_open, names, True),
        }
    samples: dict[str, list[float]] = {k: [] for k in scenarios}
    for r in range(repeats):
        order = list(scenarios)
        order = order[r % len(order) :] + order[: r % len(order)]
        for key in order:
            scenario, sel_names, needs_embedder = scenarios[key]
            samples[key].append(await time_cold(settings, scenario, sel_names, needs_embedder=needs_embedder))
    out = {k: summary(v) for k, v in samples.items()}
    ratios = {}
    for kind in ("open", "search"):
        if f"{kind}_1" not in out:
            continue
        one = out[f"{kind}_1"]["median"]
        ratios[f"{kind}_8_concurrent/1"] = out[f"{kind}_8_concurrent"]["median"] / one
        seq = "open_8_sequential" if kind == "open" else "search_8_sequential_open"
        ratios[f"{kind}_8_sequential/1"] = out[seq]["median"] / one
    return {"seconds": out, "ratios": ratios}


def print_block(title: str, result: dict[str, dict]) -> None:
    """Medians and ratios as a small table."""
    print(title)
    print(f"  {'scenario':28} {'median':>9} {'min':>9} {'max':>9}")
    for key, s in result["seconds"].items():
        print(f"  {key:28} {s['median'] * 1000:7.0f}ms {s['min'] * 1000:7.0f}ms {s['max'] * 1000:7.0f}ms")
    for key, ratio in result["ratios"].items():
        print(f"  ratio {key:22} {ratio:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt-ms", type=float, default=50.0, help="round-trip time the proxy adds")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with S3WithLatency(rtt_ms=args.rtt_ms) as s3:
        delayed = settings_for(s3.storage_options(through_proxy=True))
        direct = settings_for(s3.storage_options(through_proxy=False))
        rtt = {"direct": measure_rtt(s3.direct), "proxy": measure_rtt(s3.proxy)}
        start = time.perf_counter()
        anyio.run(build, delayed)
        build_secs = time.perf_counter() - start
        with_latency = anyio.run(lambda: measure(delayed, args.repeats, with_search=True))
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
