"""Ingest throughput, search latency and CLI cold start on CISI.

(a) chunks/s of `haiku add-src` on folders of 500 and 2,000 documents (Markdown files: CISI's 1460,
    then joined pairs of them) against the bare embedder's chunks/s on the very same chunk texts, by
    wall and CPU time, with the peak RSS of each add-src (it must not grow with the folder);
(b) per-query search latency (p50/p95) for fts, vector and hybrid over the judged CISI queries,
    in one process through the library, and through `haiku search --from FILE --json`;
(c) cold start (benchmarks/cold_start.py): wall and CPU time from process start to exit of `haiku --help`,
    one `haiku search` (fts, hybrid), `haiku list` and `haiku info`, as ratios to `python -c pass` and
    `python -c 'import lancedb'`; optionally beside a source tree of an earlier haiku (`--before`) and
    haiku.rag's equivalent commands on a database of the same documents (`--haiku-rag`).

    python benchmarks/latency.py [--data ../shared/data/cisi] [--work DIR] [--docs 500,2000] [--json]
    python benchmarks/latency.py --parts cold [--haiku VENV/bin/haiku] [--before TREE] [--haiku-rag BIN]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import cold_start
from common import DEFAULT_DATA, Table, load_beir, result, write_corpus_files

from haiku_cli.databases import operations
from haiku_cli.databases.workspace import Workspace
from haiku_cli.ingest.chunking import Chunk
from haiku_cli.ingest.embedding import embedding_text
from haiku_cli.store.database import open_database
from haiku_cli.store.location import Location

TYPES = ("fts", "vector", "hybrid")
COLD_DOCS = 50  # cold start is measured on one small local database


def haiku_argv() -> list[str]:
    """The `haiku` console script beside this interpreter (what a user runs), else `python -m haiku_cli`."""
    script = Path(sys.executable).parent / "haiku"
    return [str(script)] if script.exists() else [sys.executable, "-m", "haiku_cli"]


def run_timed(args: list[str], config: Path, env: dict[str, str] | None = None) -> float:
    """Wall seconds of one `haiku` process, start to exit; fails loudly on a non-zero exit."""
    return run_process([*haiku_argv(), *args], {"HAIKU_CONFIG": str(config), **(env or {})})


def run_process(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one process, start to exit; fails loudly on a non-zero exit."""
    start = time.perf_counter()
    subprocess.run(argv, env={**os.environ, **(env or {})}, capture_output=True, text=True, check=True)
    return time.perf_counter() - start


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def write_config(work: Path, names: list[str], file: str = "config.toml") -> Path:
    """A config naming local databases `work/NAME.lancedb`."""
    config = work / file
    config.write_text(
        "[databases]\n" + "".join(f'{n} = "{work / (n + ".lancedb")}"\n' for n in names), encoding="utf-8"
    )
    return config


def chunk_texts(path: Path) -> list[str]:
    """Exactly what ingest embedded for each chunk of a database (title and headings + text)."""
    db = open_database(Location(path.stem, str(path)))
    chunks = db.chunks.to_arrow()
    if "search_text" in chunks.column_names:  # stored since the full-text index covers titles
        return chunks.column("search_text").to_pylist()
    docs = db.documents.to_arrow().select(["id", "title"]).to_pydict()
    titles = dict(zip(docs["id"], docs["title"], strict=True))
    rows = chunks.select(["document_id", "order", "text", "heading_path"]).to_pylist()
    return [
        embedding_text(titles[r["document_id"]], Chunk(r["order"], r["text"], r["heading_path"] or [], []))
        for r in rows
    ]


def ingest_corpus(corpus: dict[str, dict], n_docs: int) -> dict[str, dict]:
    """The first `n_docs` CISI documents by id; past its 1460, joined pairs of them (deterministic).

    Extra document k joins abstract k with abstract -k-1 (the first with the last, and so on), under
    both titles, so a 2,000-document folder is realistic text without repeating any document.
    """
    ids = sorted(corpus, key=int)
    docs = {i: corpus[i] for i in ids[:n_docs]}
    for k in range(max(0, n_docs - len(ids))):
        a, b = corpus[ids[k % len(ids)]], corpus[ids[-1 - k % len(ids)]]
        docs[f"{len(ids) + k + 1}"] = {
            "title": f"{a['title']} / {b['title']}",
            "text": f"{a['text']}\n\n{b['text']}",
        }
    return docs


def run_measured(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, CPU s = user + sys, peak RSS MB) of one process, from the kernel's own accounting."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}"
        )
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def ingest_throughput(work: Path, corpus: dict[str, dict], n_docs: int, repeats: int, emb) -> dict:
    """`haiku add-src` (whole process) versus the bare embedder on the same chunk texts, wall and CPU."""
    folder = work / f"ingest-docs-{n_docs}"
    shutil.rmtree(folder, ignore_errors=True)
    write_corpus_files(ingest_corpus(corpus, n_docs), folder)
    names = [f"ingest{n_docs}_{r}" for r in range(repeats)]
    config = write_config(work, names, f"ingest{n_docs}.toml")
    ingest, ingest_cpu, rss, raw, raw_cpu, texts = [], [], [], [], [], []
    loads = [os.getloadavg()[0]]
    for name in names:  # interleaved, so a change in machine load hits both alike
        shutil.rmtree(work / f"{name}.lancedb", ignore_errors=True)
        wall, cpu, peak = run_measured(
            [*haiku_argv(), "add-src", str(folder), "-d", name], {"HAIKU_CONFIG": str(config)}
        )
        ingest.append(wall)
        ingest_cpu.append(cpu)
        rss.append(peak)
        texts = chunk_texts(work / f"{name}.lancedb")
        shutil.rmtree(work / f"{name}.lancedb", ignore_errors=True)
        start, cpu_start = time.perf_counter(), time.process_time()
        anyio.run(emb.embed_documents, texts)
        raw.append(time.perf_counter() - start)
        raw_cpu.append(time.process_time() - cpu_start)
        loads.append(os.getloadavg()[0])
    shutil.rmtree(folder, ignore_errors=True)
    chunks = len(texts)
    rate = {k: chunks / statistics.median(v) for k, v in [("ingest", ingest), ("raw", raw)]}
    cpu_rate = {k: chunks / statistics.median(v) for k, v in [("ingest", ingest_cpu), ("raw", raw_cpu)]}
    return {
        "documents": n_docs,
        "chunks": chunks,
        "repeats": repeats,
        "add_src_seconds": [round(s, 2) for s in ingest],
        "add_src_cpu_seconds": [round(s, 2) for s in ingest_cpu],
        "add_src_peak_rss_mb": rss,
        "raw_embed_seconds": [round(s, 2) for s in raw],
        "raw_embed_cpu_seconds": [round(s, 2) for s in raw_cpu],
        "add_src_chunks_per_s": round(rate["ingest"], 1),
        "raw_embed_chunks_per_s": round(rate["raw"], 1),
        "ratio_ingest/raw": round(rate["ingest"] / rate["raw"], 3),
        "ratio_ingest/raw_cpu": round(cpu_rate["ingest"] / cpu_rate["raw"], 3),
        "loadavg_1min": [round(x, 2) for x in loads],
    }


def ingest_sizes(work: Path, corpus: dict[str, dict], sizes: list[int], repeats: int) -> dict:
    """`ingest_throughput` at each folder size, after loading and warming the bare embedder once."""
    from haiku_cli.embed import load_embedder

    emb = load_embedder()
    load_start = time.perf_counter()
    anyio.run(emb.embed_documents, ["load the model"])
    load_secs = time.perf_counter() - load_start
    return {
        "embedder_load_seconds": round(load_secs, 2),
        "sizes": [ingest_throughput(work, corpus, n, repeats, emb) for n in sizes],
    }


def build_search_db(work: Path, corpus: dict[str, dict], name: str = "cisi") -> tuple[Path, float | None]:
    """The corpus in database `name`, alone in config `name.toml` (reused when present); seconds to build."""
    config = write_config(work, [name], f"{name}.toml")
    if (work / f"{name}.lancedb").exists():
        return config, None
    folder = work / f"{name}-docs"
    write_corpus_files(corpus, folder)
    return config, run_timed(["add-src", str(folder), "-d", name], config)


async def library_latency(config: Path, queries: dict[str, str], passes: int) -> dict:
    """Seconds per `operations.search_hits` call on a warm workspace (pool open, embedder loaded)."""
    ws = Workspace.load(config)
    sel = ws.select_many(["cisi"])
    for t in TYPES:
        await operations.search_hits(ws, sel, "warm up the pool and the embedder", search_type=t)
    samples: dict[str, list[float]] = {t: [] for t in TYPES}
    for p in range(passes):
        for i, text in enumerate(queries.values()):
            shift = (i + p) % len(TYPES)
            for t in TYPES[shift:] + TYPES[:shift]:
                start = time.perf_counter()
                await operations.search_hits(ws, sel, text, search_type=t)
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


def cli_batch_latency(config: Path, qfile: Path, n_queries: int, repeats: int) -> dict:
    """`haiku search --from FILE --json` per type: whole-process wall time and that per query."""
    out = {}
    walls: dict[str, list[float]] = {t: [] for t in TYPES}
    for _ in range(repeats):
        for t in TYPES:
            walls[t].append(run_timed(["search", "--from", str(qfile), "--json", "--type", t], config))
    for t, w in walls.items():
        med = statistics.median(w)
        out[t] = {
            "wall_s": round(med, 2),
            "per_query_ms": round(med / n_queries * 1000, 1),
            "samples_s": [round(x, 2) for x in w],
        }
    return out


PARTS = ("ingest", "search", "cold")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=None, help="keep databases here (cisi reused)")
    parser.add_argument(
        "--parts", default=",".join(PARTS), help="comma-separated subset of ingest,search,cold"
    )
    parser.add_argument(
        "--docs", default="500,2000", help="folder sizes (documents, comma-separated) for the ingest part"
    )
    parser.add_argument("--ingest-repeats", type=int, default=3)
    parser.add_argument("--passes", type=int, default=3, help="passes over the queries (library)")
    parser.add_argument("--cli-repeats", type=int, default=3, help="runs of each `search --from`")
    parser.add_argument("--cold-repeats", type=int, default=5)
    parser.add_argument(
        "--haiku", type=Path, default=None, help="cold start: the `haiku` to time (e.g. another venv's)"
    )
    parser.add_argument(
        "--before", type=Path, default=None, help="cold start: also time this source tree (PYTHONPATH)"
    )
    parser.add_argument(
        "--haiku-rag", type=Path, default=None, help="cold start: also time this haiku.rag executable"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if not parts <= set(PARTS):
        parser.error(f"--parts takes a subset of {','.join(PARTS)}")
    with result("cold", "Cold commands") as table:
        if args.work is None:
            with tempfile.TemporaryDirectory(prefix="haiku-latency-") as tmp:
                found = measure(args, parts, Path(tmp))
        else:
            args.work.mkdir(parents=True, exist_ok=True)
            found = measure(args, parts, args.work)
        if "cold_start" in found:  # the table is of the cold part: the others only print
            cold_rows(table, found["cold_start"])
    if args.json:
        print(json.dumps(found, indent=2))
    else:
        report(found, args)


def cold_rows(table: Table, cold: dict) -> None:
    """Each command as a fresh process: medians of the alternating runs, against bare Python's start."""
    table.columns = (
        "a fresh process",
        "wall s",
        "CPU s",
        "wall x `python -c pass`",
        "wall x `import lancedb`",
    )
    bare = "a bare `python -c pass` and `import lancedb`"
    table.comparison = f"{bare}, started in turn with each (medians of {cold['repeats']})"
    for case, got in cold["rows"].items():
        table.add(
            f"`{case}`",
            f"{got['wall_s']:.3f}",
            f"{got['cpu_s']:.3f}",
            f"{got['wall_x_pass']:.1f}",
            f"{got['wall_x_import_lancedb']:.2f}",
        )


def measure(args: argparse.Namespace, parts: set[str], work: Path) -> dict:
    """Run the chosen parts in `work`; the result as one JSON-ready dict."""
    corpus, queries, _ = load_beir(args.data)
    loads = [os.getloadavg()[0]]
    result: dict = {"cpus": os.cpu_count(), "queries": len(queries)}
    if "ingest" in parts:
        sizes = [int(n) for n in args.docs.split(",")]
        result["ingest"] = ingest_sizes(work, corpus, sizes, args.ingest_repeats)
        loads.append(os.getloadavg()[0])
    if "search" in parts:
        config, build_secs = build_search_db(work, corpus)
        result["search_database"] = {"documents": len(corpus), "build_seconds": build_secs}
    if "search" in parts:
        qfile = work / "queries.jsonl"
        qfile.write_text("".join(json.dumps({"id": q, "query": t}) + "\n" for q, t in queries.items()))
        result["library_search"] = anyio.run(library_latency, config, queries, args.passes)
        loads.append(os.getloadavg()[0])
        result["cli_search_from"] = cli_batch_latency(config, qfile, len(queries), args.cli_repeats)
        loads.append(os.getloadavg()[0])
    if "cold" in parts:
        small = {i: corpus[i] for i in sorted(corpus, key=int)[:COLD_DOCS]}
        small_config, _ = build_search_db(work, small, "small")
        result["cold_start"] = cold_start.cold_start(
            small_config,
            args.cold_repeats,
            haiku=args.haiku,
            before=args.before,
            haiku_rag=args.haiku_rag,
            docs=work / "small-docs",
            work=work,
        )
        loads.append(os.getloadavg()[0])
    result["loadavg_1min_during"] = [round(x, 2) for x in loads]
    return result


def report(result: dict, args: argparse.Namespace) -> None:
    """The human-readable form of the result."""
    if ingest := result.get("ingest"):
        print(
            f"(a) ingest, medians of {args.ingest_repeats}; "
            f"bare embedder load {ingest['embedder_load_seconds']} s"
        )
        for i in ingest["sizes"]:
            print(f"    {i['documents']} documents, {i['chunks']} chunks:")
            print(
                f"      haiku add-src {i['add_src_chunks_per_s']:8.1f} chunks/s  "
                f"(wall {statistics.median(i['add_src_seconds']):.1f} s, "
                f"CPU {statistics.median(i['add_src_cpu_seconds']):.1f} s, whole process; "
                f"peak RSS {max(i['add_src_peak_rss_mb'])} MB)"
            )
            print(
                f"      bare embedder {i['raw_embed_chunks_per_s']:8.1f} chunks/s  "
                f"(wall {statistics.median(i['raw_embed_seconds']):.1f} s, "
                f"CPU {statistics.median(i['raw_embed_cpu_seconds']):.1f} s)"
            )
            print(
                f"      ratio ingest/raw {i['ratio_ingest/raw']:.3f} (wall), "
                f"{i['ratio_ingest/raw_cpu']:.3f} (CPU); "
                f"load {', '.join(f'{x:.1f}' for x in i['loadavg_1min'])}"
            )
    if library := result.get("library_search"):
        db = result["search_database"]
        built = f"built in {db['build_seconds']:.1f} s" if db["build_seconds"] else "reused"
        print(f"(b) search over {db['documents']} documents ({built}), {result['queries']} queries")
        print(f"    library, warm, {args.passes} passes:  {'p50':>8} {'p95':>8}")
        for t, s in library.items():
            print(f"      {t:8}                   {s['p50_ms']:6.1f}ms {s['p95_ms']:6.1f}ms")
        print(f"    CLI `search --from FILE --json`, median of {args.cli_repeats}:")
        for t, s in result["cli_search_from"].items():
            print(f"      {t:8} wall {s['wall_s']:6.2f} s = {s['per_query_ms']:6.1f} ms/query")
    if cold := result.get("cold_start"):
        cold_start.report(cold)
    during = ", ".join(f"{x:.2f}" for x in result["loadavg_1min_during"])
    print(f"load average (1 min) during the run: {during} on {result['cpus']} CPUs")


if __name__ == "__main__":
    main()
