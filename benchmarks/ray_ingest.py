"""`add-src --engine ray` against a single-process add: chunks/s with 1 and 2 workers, the driver's CPU per
chunk, peak RSS and fragments committed when the workers write fragments and when they send rows (`[ray]
fragments = false`), the overhead on a small folder, and a projection for 16 machines from the measured
per-worker and per-driver rates.

    python benchmarks/ray_ingest.py [--data DIR] [--docs N] [--copies 1] [--small 10] [--work DIR]
                                    [--driver-only] [--json]

`--copies N` puts N copies of the documents in the big folder (each its own file: N times the chunks);
`--driver-only` runs just the 2-worker cluster's adds, big and small, in both ways of writing, for the
driver's CPU per chunk: (big - small) / (their chunks), the process's start and joining left out.

Each add is a whole `haiku` process into a new local database. The Ray cluster (N worker CPUs) is started
by this script with `ray.init(address="local")` and joined by `haiku --ray-address`, so its start is
timed apart from the add; the small-folder case also runs with no cluster running, as a first-time user
would (haiku then starts one itself). The haiku process's CPU seconds (the driver: what the one writer
costs per chunk, the ceiling of any cluster for one database) and peak RSS are its own rusage (wait4);
fragments committed are read from the new database's versions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_DATA, Table, load_beir, ratio, result, write_corpus_files

MACHINES = 16


def _add(folder: Path, db: Path, config: Path, *args: str) -> dict[str, float | int | str]:
    """One `haiku add-src` process: wall and CPU seconds, its peak resident memory, chunks stored, the
    fragments its commit appended, what it said on stderr, and the machine's load when it began."""
    load = round(os.getloadavg()[0], 2)
    env = {**os.environ, "HAIKU_CONFIG": str(config), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "haiku_cli", "add-src", str(folder), "--db", str(db), "--json", *args],
            env=env,
            stdout=out,
            stderr=err,
        )
        # wait4: this process's own CPU and peak RSS (RUSAGE_CHILDREN's peak is the largest child's ever).
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode not in (0, 5):
        raise SystemExit(f"add-src failed ({process.returncode}): {stderr}")
    report = json.loads(stdout)
    chunks = sum(o.get("chunks") or 0 for o in report["outcomes"])
    return {
        "wall_s": round(wall, 2),
        "driver_cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "driver_peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "chunks": chunks,
        "chunks_per_s": round(chunks / wall, 1),
        "fragments_committed": _fragments_committed(db),
        "stderr": stderr.strip(),
        "load_avg_1m": load,
    }


def _fragments_committed(db: Path) -> int:
    """The most fragments one version of the chunks table added over the one before: the add's Append
    (a new database; the index upkeep after it only merges files)."""
    import lance

    dataset = lance.dataset(str(db / "chunks.lance"))
    counts = [len(dataset.checkout_version(v["version"]).get_fragments()) for v in dataset.versions()]
    return max((b - a for a, b in zip([0, *counts], counts, strict=False)), default=0)


def _descendants_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of each live process below this one but `haiku`: a cluster's gcs,
    raylet and workers. Ended workers' time did not show in the raylet's reaped-children time here
    (4.5 CPU-s for 1,650 chunks embedded), so a worker's CPU is read while it lives."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    below, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        for child, parent in parents.items():
            if parent == pid and child not in below:
                below.add(child)
                todo.append(child)
    return {p: times[p] for p in below if not _is_driver(p)}


def _is_driver(pid: int) -> bool:
    """Whether a process is the `haiku` command itself (its CPU is counted by `_add`)."""
    try:
        return b"haiku_cli" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _on_cluster(folder: Path, db: Path, config: Path, address: str) -> dict[str, float | int | str]:
    """An add on the cluster at `address`, with the CPU seconds the cluster spent on it (sampled every
    0.2 s: a worker's last fraction of a sample before it ends is missed)."""
    import threading

    first = _descendants_cpu()
    last = dict(first)
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            last.update(_descendants_cpu())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        run = _add(folder, db, config, "--engine", "ray", "--ray-address", address)
    finally:
        stop.set()
        sampler.join()
    cluster_cpu = sum(t - first.get(p, 0.0) for p, t in last.items())
    return {
        **run,
        "cluster_cpu_s": round(cluster_cpu, 2),
        "chunks_per_cluster_cpu_s": round(int(run["chunks"]) / max(cluster_cpu, 1e-9), 1),
    }


def _with_cluster(cpus: int, run) -> tuple[float, dict]:
    """Start a local Ray cluster of `cpus` worker CPUs (timed), run `run(address)`, stop the cluster."""
    import ray

    start = time.perf_counter()
    ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    started = time.perf_counter() - start
    try:
        return started, run(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def main() -> None:
    with result("ray", "Ingest on Ray") as table:
        ray_rows(table, run())


def ray_rows(table: Table, out: dict) -> None:
    """The driver's CPU per chunk with worker-written fragments against rows; the projection, if run."""
    fragments, rows = out["ray_2"], out["ray_2_rows"]
    table.add(
        "`add-src --engine ray`, the driver's CPU per chunk (workers write fragments)",
        f"{fragments['driver_cpu_ms_per_chunk']} ms ({fragments['driver_chunks_per_cpu_s']:,} chunks per "
        "driver CPU-s)",
        f"workers sending rows: {rows['driver_cpu_ms_per_chunk']} ms",
        ratio(fragments["driver_cpu_ms_per_chunk"], rows["driver_cpu_ms_per_chunk"]),
    )
    if p := out.get("projection_16_machines"):
        table.add(
            f"projection for {MACHINES} machines x 2 workers",
            f"{p['projected_chunks_per_s']:,} chunks/s",
            f"one process: {out['single']['chunks_per_s']} chunks/s",
            ratio(p["projected_chunks_per_s"], out["single"]["chunks_per_s"]),
        )


def run() -> dict:
    """Run every case and print the figures (or one JSON object)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--docs", type=int, default=1460, help="CISI documents in the big folder")
    parser.add_argument("--copies", type=int, default=1, help="copies of the documents in the big folder")
    parser.add_argument("--small", type=int, default=10, help="documents in the small folder")
    parser.add_argument("--driver-only", action="store_true", help="only the driver's CPU per chunk")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="haiku-ray-"))
    shutil.rmtree(work, ignore_errors=True)
    corpus, _, _ = load_beir(args.data)
    ids = sorted(corpus)
    big, small = work / "big", work / "small"
    for copy in range(args.copies):
        write_corpus_files({i: corpus[i] for i in ids[: args.docs]}, big / f"copy{copy}")
    write_corpus_files({i: corpus[i] for i in ids[: args.small]}, small)
    config = work / "config.toml"
    config.write_text("[ray]\nmin_mb = 0\n")  # the cluster even for the small folder (its overhead)
    rows_config = work / "rows.toml"
    rows_config.write_text("[ray]\nmin_mb = 0\nfragments = false\n")  # workers send rows to the driver
    default_config = work / "default.toml"
    default_config.write_text("")

    out: dict = {"docs": args.docs, "copies": args.copies, "small_docs": args.small, "cpus": os.cpu_count()}
    out["load_avg_1m_before"] = round(os.getloadavg()[0], 2)
    if not args.driver_only:
        out["single"] = _add(big, work / "single.lancedb", config)
        started, run = _with_cluster(
            1, lambda address: _on_cluster(big, work / "ray1.lancedb", config, address)
        )
        out["ray_1"] = {**run, "cluster_start_s": round(started, 2)}

    def both(address: str) -> dict[str, dict]:
        # The same cluster for both ways of writing, so they differ only in what the driver does; the
        # small folder's adds measure what a driver pays whatever the size (its start, joining).
        return {
            "small_ray_2": _on_cluster(small, work / "small2.lancedb", config, address),
            "small_ray_2_rows": _on_cluster(small, work / "small2_rows.lancedb", rows_config, address),
            "ray_2": _on_cluster(big, work / "ray2.lancedb", config, address),
            "ray_2_rows": _on_cluster(big, work / "ray2_rows.lancedb", rows_config, address),
        }

    started, runs = _with_cluster(2, both)
    for name, run in runs.items():
        out[name] = {**run, "cluster_start_s": round(started, 2)}
    if not args.driver_only:
        out["small_single"] = _add(small, work / "small_single.lancedb", config)
        # No cluster running: haiku starts a local one for the add and stops it after (a first-time user).
        out["small_ray_own_cluster"] = _add(small, work / "small_ray.lancedb", config, "--engine", "ray")
        out["small_ray_default_threshold"] = _add(
            small, work / "small_default.lancedb", default_config, "--engine", "ray"
        )
    out["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    for case in ("ray_2", "ray_2_rows"):
        r, fixed = out[case], out[f"small_{case}"]
        cpu = max(r["driver_cpu_s"] - fixed["driver_cpu_s"], 1e-9)
        chunks = r["chunks"] - fixed["chunks"]
        r["driver_cpu_ms_per_chunk"] = round(1000 * cpu / chunks, 3)
        r["driver_chunks_per_cpu_s"] = round(chunks / cpu, 1)
    if not args.driver_only:
        # A worker given a whole core embeds at its rate per CPU-second (the shared machine's wall clock
        # says more about the other jobs on it); the one driver takes its own CPU per chunk.
        per_worker = out["ray_1"]["chunks_per_cluster_cpu_s"]
        writer_ceiling = out["ray_2"]["driver_chunks_per_cpu_s"]
        single = out["single"]
        single["chunks_per_cpu_s"] = round(single["chunks"] / single["driver_cpu_s"], 1)
        out["projection_16_machines"] = {
            "per_worker_chunks_per_cpu_s": per_worker,
            "workers_per_machine": 2,
            "embedding_chunks_per_s": round(per_worker * 2 * MACHINES, 1),
            "writer_ceiling_chunks_per_cpu_s": writer_ceiling,
            "rows_writer_ceiling_chunks_per_cpu_s": out["ray_2_rows"]["driver_chunks_per_cpu_s"],
            "projected_chunks_per_s": round(min(per_worker * 2 * MACHINES, writer_ceiling), 1),
        }
    if args.json:
        print(json.dumps(out))
        return out
    for case in (
        "single",
        "ray_1",
        "ray_2",
        "ray_2_rows",
        "small_ray_2",
        "small_ray_2_rows",
        "small_single",
        "small_ray_own_cluster",
        "small_ray_default_threshold",
    ):
        if case not in out:
            continue
        r = out[case]
        extra = (
            f", cluster start {r['cluster_start_s']} s, cluster CPU {r['cluster_cpu_s']} s "
            f"({r['chunks_per_cluster_cpu_s']} chunks/CPU-s)"
            if "cluster_start_s" in r
            else ""
        )
        print(
            f"{case:28} {r['chunks']:5} chunks  {r['wall_s']:7.2f} s  {r['chunks_per_s']:7.1f} chunks/s  "
            f"driver CPU {r['driver_cpu_s']:.2f} s, peak RSS {r['driver_peak_rss_mb']} MB, "
            f"{r['fragments_committed']} fragments{extra}"
        )
    for case in ("ray_2", "ray_2_rows"):
        r = out[case]
        print(
            f"{case:28} driver {r['driver_cpu_ms_per_chunk']} ms CPU per chunk "
            f"({r['driver_chunks_per_cpu_s']} chunks per driver CPU-s, the small add's CPU left out)"
        )
    p = out.get("projection_16_machines")
    if p:
        print(
            f"16 machines x 2 workers at {p['per_worker_chunks_per_cpu_s']} chunks/CPU-s each: "
            f"{p['embedding_chunks_per_s']} chunks/s embedded; the driver commits "
            f"{p['writer_ceiling_chunks_per_cpu_s']} chunks per CPU-second with fragments "
            f"({p['rows_writer_ceiling_chunks_per_cpu_s']} writing rows) "
            f"-> {p['projected_chunks_per_s']} chunks/s"
        )
    print(f"load average {out['load_avg_1m_before']} before, {out['load_avg_1m_after']} after")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
