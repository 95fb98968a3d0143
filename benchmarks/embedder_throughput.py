"""Load time and throughput of haiku's bundled embedder on CISI paragraphs.

    python benchmarks/embedder_throughput.py [--data DATA_DIR_OR_CORPUS] [--n 500] [--json]

DATA_DIR_OR_CORPUS is a folder holding corpus.jsonl (or the file itself); it defaults to the shared
data's cisi folder. Writes the area's table to benchmarks/results/embedder.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # run from a checkout without installing
from common import DEFAULT_DATA, Table, result  # noqa: E402


def read_paragraphs(source: Path, n: int) -> list[str]:
    """Return the first `n` non-empty `text` fields of a BEIR-style corpus.jsonl."""
    corpus = source / "corpus.jsonl" if source.is_dir() else source
    texts: list[str] = []
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            text = json.loads(line).get("text", "").strip()
            if text:
                texts.append(text)
            if len(texts) == n:
                break
    if not texts:
        raise SystemExit(f"no paragraphs found in {corpus}")
    return texts


def run(source: Path, n: int) -> dict[str, float | int | str]:
    """Measure import, model load and embedding of `n` paragraphs; return the numbers."""
    texts = read_paragraphs(source, n)

    start = time.perf_counter()
    from haiku_cli.embed import load_embedder

    embedder = load_embedder()
    import_s = time.perf_counter() - start

    start = time.perf_counter()
    embedder.model.load()  # type: ignore[attr-defined]  # onnxruntime session + tokenizer
    load_s = time.perf_counter() - start

    asyncio.run(embedder.embed_documents(texts[:4]))  # first-run allocations, not part of throughput
    start, cpu_start = time.perf_counter(), time.process_time()
    vectors = asyncio.run(embedder.embed_documents(texts))
    embed_s = time.perf_counter() - start
    # CPU seconds of all threads: a steadier measure than wall time on a shared machine.
    cpu_s = time.process_time() - cpu_start

    tokens = [embedder.count_tokens(t) for t in texts]
    return {
        "embedder": embedder.name,
        "paragraphs": len(texts),
        "dimension": int(vectors.shape[1]),
        "mean_tokens": round(sum(min(t, embedder.max_tokens) for t in tokens) / len(tokens), 1),
        "truncated": sum(t > embedder.max_tokens for t in tokens),
        "cpus": os.cpu_count() or 0,
        "import_s": round(import_s, 3),
        "load_s": round(load_s, 3),
        "embed_s": round(embed_s, 3),
        "paragraphs_per_s": round(len(texts) / embed_s, 1),
        "cpu_s": round(cpu_s, 3),
        "paragraphs_per_cpu_s": round(len(texts) / cpu_s, 1),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    """Parse arguments, run the benchmark, print a summary or JSON."""
    parser = argparse.ArgumentParser(description="Bundled embedder load time and throughput.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder or corpus.jsonl")
    parser.add_argument("--n", type=int, default=500, help="number of paragraphs (default 500)")
    parser.add_argument("--json", action="store_true", help="emit one JSON object instead of text")
    args = parser.parse_args()

    with result("embedder", "Bundled embedder") as table:
        measured = run(args.data, args.n)
        embedder_rows(table, measured)
    if args.json:
        print(json.dumps(measured))
        return
    _print(measured)


def embedder_rows(table: Table, raw: dict) -> None:
    table.add(
        "bundled embedder (all-MiniLM-L6-v2, ONNX, int8), one text per call",
        f"{raw['paragraphs_per_s']} paragraphs/s ({raw['paragraphs_per_cpu_s']} per CPU-s)",
        f"{raw['paragraphs']} CISI abstracts, mean {raw['mean_tokens']} tokens",
    )
    table.add("model load (onnxruntime import, session, tokenizer)", f"{raw['load_s']} s")


def _print(result: dict) -> None:
    print(
        f"{result['embedder']}: {result['paragraphs']} paragraphs "
        f"(mean {result['mean_tokens']} tokens, {result['truncated']} truncated), {result['cpus']} CPUs\n"
        f"  import {result['import_s']:.3f} s   model load {result['load_s']:.3f} s\n"
        f"  embed {result['embed_s']:.2f} s = {result['paragraphs_per_s']:.1f} paragraphs/s "
        f"({result['paragraphs_per_cpu_s']:.1f} per CPU-second; load average {result['load_avg_1m']})"
    )


if __name__ == "__main__":
    main()
