"""Keeping a corpus fresh: `haiku sync` of an unchanged tree, and save-to-searchable under `haiku watch`.

A tree of N small Markdown files (100 per folder) is added through a fast hashing embedder served on
127.0.0.1 (the bundled model would take minutes to embed 10k files; sync and watch cost is in the walk,
the stat and the write, not the model). Then:

- `sync` of the unchanged tree, in-process (no interpreter start-up), three runs: wall and CPU seconds,
  and how many files under the tree were opened (an audit hook counts every open; the target is 0);
- `haiku watch` in a subprocess: a file is saved (rewritten with a new word), and the time until watch
  prints its change (the write committed and indexed: searchable) is taken, one save at a time; p50/p95;
- the watcher's CPU seconds over an idle spell, and its resident memory.

    python benchmarks/sync_watch.py --files 10000 --work /tmp/haiku-syncwatch [--saves 20] [--json]
    (--reuse keeps an earlier run's tree and database; --debounce MS is passed to watch)
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import anyio  # noqa: E402

from benchmarks.common import Table, haiku, result  # noqa: E402
from tests.support.hash_embedder import serve_hash_embedder  # noqa: E402

DIMENSION = 384
PER_FOLDER = 100
WORDS = ["tide", "estuary", "heron", "salt", "marsh", "channel", "mud", "reed", "ebb", "flood"]


def build_tree(root: Path, files: int) -> None:
    """N small Markdown files, 100 per folder."""
    shutil.rmtree(root, ignore_errors=True)
    for i in range(files):
        folder = root / f"f{i // PER_FOLDER:04d}"
        if i % PER_FOLDER == 0:
            folder.mkdir(parents=True)
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(12))
        (folder / f"note{i:06d}.md").write_text(f"# Note {i}\n\nNote {i} says {words}.\n", encoding="utf-8")


def sync_unchanged(config: Path, db: Path, tree: Path, runs: int = 3) -> dict:
    """In-process `sync` of the unchanged tree: wall and CPU seconds, and files opened under the tree."""
    os.environ["HAIKU_CONFIG"] = str(config)
    from haiku_cli.databases import operations
    from haiku_cli.databases.workspace import Workspace
    from haiku_cli.store.location import Location

    prefix = str(tree)
    opened: list[str] = []

    def audit(event: str, args: tuple) -> None:
        # A file's opening, not a look for an ignore file that is not there.
        if (
            event == "open"
            and isinstance(args[0], str)
            and args[0].startswith(prefix)
            and os.path.isfile(args[0])
        ):
            opened.append(args[0])

    sys.addaudithook(audit)
    location = Location.from_path(db)
    walls, cpus, counts, reports = [], [], [], []
    for _ in range(runs):
        ws = Workspace.load()
        opened.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        run = anyio.run(lambda ws=ws: operations.sync(ws, [location]))
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        counts.append(len(opened))
        (source,) = run.databases[0].sources
        reports.append((source.unchanged, len(source.changes)))
    return {
        "wall_seconds": [round(w, 3) for w in walls],
        "cpu_seconds": [round(c, 3) for c in cpus],
        "files_opened": counts,
        "unchanged_and_changes": reports,
    }


def watch_latency(
    config: Path, db: Path, tree: Path, saves: int, debounce_ms: int, idle_seconds: float
) -> dict:
    """Save-to-printed latency under `haiku watch`, then its idle CPU and memory."""
    env = {**os.environ, "HAIKU_CONFIG": str(config), "PYTHONUNBUFFERED": "1"}
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "haiku_cli",
            "watch",
            "--db",
            str(db),
            "--json",
            "--debounce",
            str(debounce_ms),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[tuple[float, dict]] = queue.Queue()

    def read() -> None:
        assert watcher.stdout is not None
        for line in watcher.stdout:
            lines.put((time.perf_counter(), json.loads(line)))

    threading.Thread(target=read, daemon=True).start()
    files = sorted(tree.rglob("*.md"))
    run = time.time_ns()

    def save_and_wait(path: Path, word: str) -> float:
        start = time.perf_counter()
        tmp = path.with_suffix(".tmp")
        # The run's start in the text too: a file saved by an earlier run (--reuse) changes again.
        tmp.write_text(f"# {path.stem}\n\nSaved again with the word {word} at {run}.\n", encoding="utf-8")
        os.replace(tmp, path)  # as an editor saves
        deadline = start + 120
        while time.perf_counter() < deadline:
            try:
                at, event = lines.get(timeout=1)
            except queue.Empty:
                continue
            if event["path"] == str(path) and event["status"] in ("updated", "added"):
                return at - start
        raise RuntimeError(f"watch did not report {path} within 120 s")

    try:
        save_and_wait(files[0], "warmup")  # started (its first sweep done) and watching
        latencies = []
        for i in range(saves):
            latencies.append(save_and_wait(files[(i * 997 + 1) % len(files)], f"kittiwake{i}"))
            time.sleep(0.5)
        searchable = haiku(
            ["search", f"kittiwake{saves - 1}", "--type", "fts", "--db", str(db), "--json"], config
        )
        hits = json.loads(searchable.stdout)["hits"]
        cpu_before = _cpu_seconds(watcher.pid)
        time.sleep(idle_seconds)
        idle_cpu = _cpu_seconds(watcher.pid) - cpu_before
        rss_mb, peak_mb = _memory_mb(watcher.pid)
    finally:
        watcher.terminate()
        watcher.wait(30)
    ordered = sorted(latencies)
    return {
        "debounce_ms": debounce_ms,
        "saves": saves,
        "p50_ms": round(statistics.median(ordered) * 1000),
        "p95_ms": round(ordered[max(0, round(0.95 * len(ordered)) - 1)] * 1000),
        "max_ms": round(ordered[-1] * 1000),
        "last_save_searchable": bool(hits) and f"kittiwake{saves - 1}" in hits[0]["content"],
        "idle_seconds": idle_seconds,
        "idle_cpu_seconds": round(idle_cpu, 3),
        "rss_mb": rss_mb,
        "peak_rss_mb": peak_mb,
    }


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def _memory_mb(pid: int) -> tuple[float, float]:
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return (
        round(int(status["VmRSS"].split()[0]) / 1024, 1),
        round(int(status["VmHWM"].split()[0]) / 1024, 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/haiku-syncwatch"))
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--debounce", type=int, default=500, help="watch --debounce, in ms")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle watching measured")
    parser.add_argument("--skip-watch", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="keep the tree and database of an earlier run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with result("freshness", "Keeping sources fresh: `sync` and `watch`") as table:
        freshness_rows(table, run(args))


def freshness_rows(table: Table, found: dict) -> None:
    """An unchanged tree's sync (in-process and a whole process), and watch's save-to-searchable."""
    unchanged = found["sync_unchanged"]
    cpu = unchanged["cpu_seconds"]
    table.add(
        f"`sync` of an unchanged {found['files']:,}-file tree, in-process",
        f"{min(cpu)}-{max(cpu)} CPU-s, {max(unchanged['files_opened'])} files opened",
    )
    table.add("the same as a whole `haiku sync` process", f"{found['cli_sync_unchanged_seconds']} s")
    if watch := found.get("watch"):
        table.add(
            f"save-to-searchable under `haiku watch --debounce {watch['debounce_ms']}`",
            f"p50 {watch['p50_ms'] / 1000:.2f} s, p95 {watch['p95_ms'] / 1000:.2f} s "
            f"({watch['saves']} saves)",
        )
        table.add(
            f"`haiku watch` idle for {watch['idle_seconds']:g} s",
            f"{watch['idle_cpu_seconds']} CPU-s, {watch['rss_mb']} MB RSS (peak {watch['peak_rss_mb']} MB)",
        )


def run(args: argparse.Namespace) -> dict:
    work = args.work / str(args.files)
    tree, db = work / "tree", work / "notes.lancedb"
    reuse = args.reuse and db.exists()
    if not reuse:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        build_tree(tree, args.files)
    result: dict = {"files": args.files}
    with serve_hash_embedder(DIMENSION) as url:
        config = work / "config.toml"
        config.write_text(f'[embedder]\nmodel = "ollama:hash"\nbase_url = "{url}"\n', encoding="utf-8")
        if not reuse:
            start = time.perf_counter()
            haiku(["add-src", str(tree), "--db", str(db)], config)
            result["add_src_seconds"] = round(time.perf_counter() - start, 1)
        start = time.perf_counter()
        haiku(["sync", "--db", str(db)], config)
        result["cli_sync_unchanged_seconds"] = round(time.perf_counter() - start, 2)
        result["sync_unchanged"] = sync_unchanged(config, db, tree)
        if not args.skip_watch:
            result["watch"] = watch_latency(config, db, tree, args.saves, args.debounce, args.idle)
    result["benchmark_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
