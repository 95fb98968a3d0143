"""Long-lived servers: a `haiku mcp`'s memory over 1,000 searches across databases, and servers' start-up CPU.

Corpus: `scale.py`'s synthetic documents (10 chunks of ~50 words each), `--chunks` in all split over
`--databases` databases (document i to database i % N), written by its bulk builder and reused from
`--work`. Vectors come from its hashing embedder served on 127.0.0.1.

Start-up, interleaved in one run, `--rounds` times, CPU (user + system, every thread) of each process
from its start until it has answered its first request:

- a cold `haiku search --type fts` (HAIKU_NO_DAEMON=1): the whole command;
- `haiku serve --port 0`: until `GET /` (the page) is answered;
- `haiku mcp --http --port 0`: until an `initialize` POST is answered;
- `haiku mcp` on stdio: until its answer to `tools/list` (after `initialize`), without a model and with
  one configured (`HAIKU_MODEL`: its `ask` and `analyze` tools listed too);
- and, as the floors no server of them can go below, a process importing the MCP SDK alone, and one
  importing pydantic-ai alone (which no server loads before its first question: `haiku serve` checks
  its model string against haiku's table of pydantic-ai's providers).

Memory: one `haiku mcp` on stdio, every database in scope, driven by the MCP SDK's client: `--searches`
`search` calls, round-robin over fts, vector and hybrid and over each database alone and all of them
together; RSS (`/proc/PID/status` VmRSS) sampled every `--every` searches. Reported: RSS at start, after
the first round of every kind and database (warm), peak, final, and the slope over the last half
(MB per 1,000 searches, least squares). With `--max-open N` the server keeps at most N databases open
(`[server] max_open_databases`), so databases are closed and reopened as the searches go round.

    python benchmarks/server_memory.py [--work DIR] [--chunks 50000] [--databases 4] [--searches 1000]
        [--rounds 5 (0: no start-up part)] [--max-open N] [--out FILE]

`--searches 0` measures start-up alone (its table then holds only the start-up rows: write it elsewhere
with HAIKU_BENCH_RESULTS for a trial).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Table, result  # noqa: E402
from benchmarks.scale import CHUNKS_PER_DOC, DIMENSION, EMBEDDER, Corpus, bulk_build  # noqa: E402
from tests.support.hash_embedder import serve_hash_embedder  # noqa: E402

LAUNCH = "import sys; from haiku_cli.cli.app import main; sys.argv[0] = 'haiku'; sys.exit(main())"
KINDS = ("fts", "vector", "hybrid")
TICK = os.sysconf("SC_CLK_TCK")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


def build(work: Path, chunks: int, databases: int) -> list[Path]:
    """The databases (built once, reused from `work`)."""
    corpus, docs = Corpus(), chunks // CHUNKS_PER_DOC
    paths = [work / f"db{i}.lancedb" for i in range(databases)]
    for i, path in enumerate(paths):
        if not path.exists():
            print(f"building {path}", file=sys.stderr, flush=True)
            bulk_build(corpus, path, list(range(i, docs, databases)))
    return paths


def write_config(path: Path, url: str, databases: list[Path], max_open: int | None) -> Path:
    lines = "".join(f'{p.stem} = "{p}"\n' for p in databases)
    server = f"\n[server]\nmax_open_databases = {max_open}\n" if max_open else ""
    path.write_text(f'[embedder]\nmodel = "{EMBEDDER}"\nbase_url = "{url}"\n{server}\n[databases]\n{lines}')
    return path


def cpu_s(pid: int) -> float:
    """CPU (user + system) every thread of a running process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for {pid}")


def _start(args: list[str], env: dict[str, str], **kw: Any) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCH, *args], env=env, stderr=subprocess.DEVNULL, text=True, **kw
    )


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def whole(argv: list[str], env: dict[str, str]) -> float:
    """CPU of a whole process, start to exit."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{argv[1:]} failed ({process.returncode})")
    return usage.ru_utime + usage.ru_stime


def cold_search(env: dict[str, str], query: str) -> float:
    return whole([sys.executable, "-c", LAUNCH, "search", "--type", "fts", query], env)


def first_http(args: list[str], env: dict[str, str], request: Any) -> float:
    """CPU of a server from its start until it answers `request(url)` (the URL it prints first)."""
    process = _start(args, env, stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url:
            raise SystemExit(f"haiku {args[0]} printed no URL (exit {process.wait()})")
        request(url).raise_for_status()
        return cpu_s(process.pid)
    finally:
        _stop(process)


def first_stdio(env: dict[str, str]) -> float:
    """CPU of `haiku mcp` on stdio from its start until it answers `tools/list`."""
    process = _start(["mcp"], env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert process.stdin is not None and process.stdout is not None
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        process.stdin.write(json.dumps(INITIALIZE) + "\n")
        process.stdin.flush()
        process.stdout.readline()
        process.stdin.write(json.dumps(initialized) + "\n" + json.dumps(listing) + "\n")
        process.stdin.flush()
        while json.loads(process.stdout.readline()).get("id") != 2:
            pass
        return cpu_s(process.pid)
    finally:
        _stop(process)


def startup(env: dict[str, str], query: str, rounds: int) -> dict:
    """Each server's start-up CPU beside a cold fts search's, interleaved, `rounds` times."""
    mcp_post = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    cases = {
        "cold fts search": lambda: cold_search(env, query),
        "serve, first page": lambda: first_http(
            ["serve", "--port", "0", "--model", "openai-chat:bench"], env, httpx.get
        ),
        "mcp --http, initialize": lambda: first_http(
            ["mcp", "--http", "--port", "0"],
            env,
            lambda url: httpx.post(url, json=INITIALIZE, headers=mcp_post),
        ),
        "mcp stdio, tools/list": lambda: first_stdio(env),
        # With a model, `ask` and `analyze` are listed too; pydantic-ai loads with the first question.
        "mcp stdio with a model, tools/list": lambda: first_stdio(
            {**env, "HAIKU_MODEL": "openai-chat:bench"}
        ),
        # What no server can go below: importing the packages its first answer needs.
        "MCP SDK import alone": lambda: whole([sys.executable, "-c", "import mcp.server.mcpserver"], env),
        "pydantic-ai import alone": lambda: whole([sys.executable, "-c", "import pydantic_ai"], env),
    }
    samples: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(rounds):
        for key, case in cases.items():
            samples[key].append(case())
    cold = float(np.median(samples["cold fts search"]))
    return {
        key: {
            "cpu_s_p50": round(float(np.median(values)), 3),
            "cpu_s": [round(v, 3) for v in values],
            "x_cold_search": round(float(np.median(values)) / cold, 2),
        }
        for key, values in samples.items()
    }


def _targets(names: list[str]) -> list[list[str]]:
    return [[n] for n in names] + [names]


async def _searches(params: Any, names: list[str], queries: list[str], count: int, every: int) -> dict:
    from mcp import Client

    async with Client(params) as client:
        await client.list_tools()
        pid = _server_pid()
        curve = [(0, rss_mb(pid))]
        targets = _targets(names)
        warm_after = len(KINDS) * len(targets)
        warm = None
        for i in range(count):
            kind, dbs = KINDS[i % len(KINDS)], targets[(i // len(KINDS)) % len(targets)]
            result = await client.call_tool(
                "search", {"query": queries[i % len(queries)], "type": kind, "databases": dbs}
            )
            if result.is_error:
                raise SystemExit(f"{kind} over {dbs}: {result.content[0].text}")  # type: ignore[union-attr]
            if i + 1 == warm_after:
                warm = rss_mb(pid)
            if (i + 1) % every == 0:
                curve.append((i + 1, rss_mb(pid)))
        return {"curve": curve, "warm_mb": warm}


def _server_pid() -> int:
    """The `haiku mcp` process the client spawned: this process's only child."""
    me, children = os.getpid(), []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text() if proc.name.isdigit() else ""
        except OSError:
            continue
        if stat and int(stat.rsplit(")", 1)[1].split()[1]) == me:
            children.append(int(proc.name))
    if len(children) != 1:
        raise SystemExit(f"expected one child process (the server), found {children}")
    return children[0]


def memory(env: dict[str, str], names: list[str], queries: list[str], count: int, every: int) -> dict:
    """RSS of one `haiku mcp` over `count` searches round-robin over kinds and databases."""
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-c", LAUNCH, "mcp"], env=env)
    started = time.perf_counter()
    got = anyio.run(_searches, params, names, queries, count, every)
    curve = got["curve"]
    half = [(n, mb) for n, mb in curve if n >= count / 2]
    slope = np.polyfit([n for n, _ in half], [mb for _, mb in half], 1)[0] * 1000
    return {
        "searches": count,
        "seconds": round(time.perf_counter() - started, 1),
        "start_mb": curve[0][1],
        "warm_mb": got["warm_mb"],
        "peak_mb": max(mb for _, mb in curve),
        "final_mb": curve[-1][1],
        "last_half_slope_mb_per_1000": round(float(slope), 1),
        "curve": curve,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/haiku-server-memory"))
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--databases", type=int, default=4)
    parser.add_argument("--searches", type=int, default=1000, help="0: no memory part")
    parser.add_argument("--every", type=int, default=20, help="sample RSS every N searches")
    parser.add_argument("--rounds", type=int, default=5, help="start-up measurements of each kind")
    parser.add_argument("--max-open", type=int, action="append", default=[], help="repeatable")
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    args = parser.parse_args()
    title = f"Long-lived servers: start-up CPU and memory over {args.searches:,} searches"
    with result("server_memory", title) as table:
        server_memory_rows(table, run(args))


def server_memory_rows(table: Table, raw: dict) -> None:
    """Each server's start-up CPU against a cold search's; the memory curve of each configuration."""
    each = raw["chunks"] // raw["databases"]
    if startup := raw.get("startup"):
        cold = startup["cold fts search"]["cpu_s_p50"]
        for case, got in startup.items():
            if case != "cold fts search":
                table.add(
                    f"{case}: CPU from start, p50",
                    f"{got['cpu_s_p50']} CPU-s",
                    f"a cold `haiku search --type fts`: {cold} CPU-s (goal: <= 1.0x)",
                    f"{got['x_cold_search']:.2f}x",
                )
    for limit, got in raw["memory"].items():
        label = (
            f"`haiku mcp` RSS, {got['searches']:,} searches, {raw['databases']} databases of {each:,} chunks"
        )
        label += "" if limit == "default" else f", {limit}"
        curve = " / ".join(f"{mb:.0f}" for n, mb in got["curve"] if n % 100 == 0)
        marks = " / ".join(f"{got[k]:.0f}" for k in ("start_mb", "warm_mb", "peak_mb", "final_mb"))
        table.add(f"{label}: start / warm / peak / final", f"{marks} MB")
        table.add(f"{label}: every 100 searches", f"{curve} MB")
        table.add(
            f"{label}: growth over the last half",
            f"{got['last_half_slope_mb_per_1000']:+.1f} MB per 1,000 searches",
            "goal: flat after warm-up",
        )


def run(args: argparse.Namespace) -> dict:
    args.work.mkdir(parents=True, exist_ok=True)
    paths = build(args.work, args.chunks, args.databases)
    rng = np.random.default_rng(args.chunks)
    corpus = Corpus()
    queries = [corpus.query(rng, args.chunks // CHUNKS_PER_DOC) for _ in range(200)]
    report: dict = {
        "chunks": args.chunks,
        "databases": args.databases,
        "load_average_start": round(os.getloadavg()[0], 2),
    }
    with serve_hash_embedder(DIMENSION) as url, tempfile.TemporaryDirectory() as tmp:
        base = {**os.environ, "HAIKU_NO_DAEMON": "1", "OPENAI_API_KEY": "unused", "PYTHONPATH": str(REPO)}
        env = {**base, "HAIKU_CONFIG": str(write_config(Path(tmp) / "haiku.toml", url, paths, None))}
        if args.rounds:
            report["startup"] = startup(env, queries[0], args.rounds)
        report["memory"] = {}
        if args.searches:
            report["memory"]["default"] = memory(
                env, [p.stem for p in paths], queries, args.searches, args.every
            )
        for n in args.max_open if args.searches else []:
            capped = write_config(Path(tmp) / f"capped{n}.toml", url, paths, n)
            report["memory"][f"max_open_databases={n}"] = memory(
                {**base, "HAIKU_CONFIG": str(capped)},
                [p.stem for p in paths],
                queries,
                args.searches,
                args.every,
            )
    report["load_average_end"] = round(os.getloadavg()[0], 2)
    text = json.dumps(report)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return report


if __name__ == "__main__":
    main()
