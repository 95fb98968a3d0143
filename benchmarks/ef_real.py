"""HNSW search breadth (ef) on real embeddings: recall@10 against exact search, and latency, per ef.

The breadth `candidates.ann_ef` asks was tuned on hashed-word vectors. This measures it on the bundled
model's embeddings of CISI (`../shared/data/cisi`): every sentence of every abstract is embedded, and
chunks are made of 1 to 5 consecutive sentences of one abstract, each embedded as the normalised mean
of its sentences' vectors (about what a mean-pooling model gives their joined text; embedding ~100k
chunks with the bundled model would take ~25 min of CPU here). Past those, chunks of two windows of
different abstracts fill the table to `--size`. Queries: CISI's 76 queries and 224 abstract titles
(not in the table), embedded as queries. The table is written as a haiku database (store schema), in
files of WRITE_ROWS as adds and compaction leave them, and indexed by the store's `create_vector_index`
(in segments of at most `vector_segments.SEGMENT_ROWS`; `--whole`: one graph over every row, LanceDB's
way, as haiku built it before the segments), timed with the build's peak RSS; each ef is searched as
`find_candidates`
searches (refine factor 5, `ef` per segment), and recall@10 is against an exact cosine ranking computed
with numpy. `default_ef` is the breadth a search of this table asks now.

    python benchmarks/ef_real.py --work /tmp/haiku-ef --size 100000 [--efs 300,600,...] [--whole] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from haiku_cli.embed import load_embedder  # noqa: E402
from haiku_cli.search.candidates import ann_ef  # noqa: E402
from haiku_cli.store import (  # noqa: E402
    EmbedderSpec,
    Location,
    indexes,
    open_database,
    schema,
    vector_segments,
)
from haiku_cli.store.indexes import VECTOR_INDEX, create_vector_index  # noqa: E402
from haiku_cli.store.reads import async_table  # noqa: E402

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
EFS = "150,300,600,1000,1500,2000,3030,4000"
WRITE_ROWS = 25_000  # files no larger than compaction makes them (half a segment)


def _embedded(work: Path, data: Path) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """Each abstract's sentence indexes, every sentence's vector, and the queries' vectors (cached)."""
    cache = work / "cisi_vectors.npz"
    docs = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines()]
    sentences: list[str] = []
    per_doc: list[list[int]] = []
    for doc in docs:
        parts = [s.strip() for s in _SENTENCE.split(doc["text"]) if len(s.split()) >= 4]
        per_doc.append(list(range(len(sentences), len(sentences) + len(parts))))
        sentences.extend(parts)
    if cache.exists():
        saved = np.load(cache)
        return per_doc, saved["sentences"], saved["queries"]
    rng = np.random.default_rng(3)
    titles = [docs[i]["title"] for i in rng.choice(len(docs), size=224, replace=False)]
    queries = [json.loads(line)["text"] for line in (data / "queries.jsonl").read_text().splitlines()]
    embedder = load_embedder()

    async def embed() -> tuple[np.ndarray, np.ndarray]:
        done = [0]

        def progress(n: int) -> None:
            done[0] += n
            if done[0] % 2048 < n:
                print(f"embedded {done[0]} of {len(sentences)} sentences", file=sys.stderr, flush=True)

        vectors = await embedder.embed_documents(sentences, on_progress=progress)
        asked = np.stack([await embedder.embed_query(q) for q in [*queries, *titles]])
        return vectors, asked

    vectors, asked = asyncio.run(embed())
    work.mkdir(parents=True, exist_ok=True)
    np.savez(cache, sentences=vectors, queries=asked)
    return per_doc, vectors, asked


def _chunks(per_doc: list[list[int]], sentences: np.ndarray, size: int) -> np.ndarray:
    """`size` chunk vectors: windows of 1-5 consecutive sentences of one abstract, then pairs of them."""
    windows = [s[i : i + n] for s in per_doc for n in range(1, 6) for i in range(len(s) - n + 1)]
    rng = np.random.default_rng(5)
    out = [sentences[w].mean(axis=0) for w in windows[:size]]
    while len(out) < size:
        a, b = rng.choice(len(windows), size=2, replace=False)
        out.append(np.concatenate([sentences[windows[a]], sentences[windows[b]]]).mean(axis=0))
    matrix = np.stack(out).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def _database(path: Path, vectors: np.ndarray, whole: bool) -> dict:
    """A haiku database holding one chunk per vector, with the store's vector index built on it; the
    build's wall and CPU seconds and the process's peak RSS before and after it."""
    dim = vectors.shape[1]
    db = open_database(Location("ef", str(path)), create_with=EmbedderSpec("bundled:cisi", dim))
    n = len(vectors)
    ids = [f"c{i}" for i in range(n)]
    columns = {name: pa.nulls(n, field.type) for name, field in zip(
        schema.chunks_schema(dim).names, schema.chunks_schema(dim), strict=True
    )}  # fmt: skip
    columns |= {
        "id": pa.array(ids),
        "document_id": pa.array(ids),
        "text": pa.array(ids),
        "search_text": pa.array(ids),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
    }
    table = pa.table(columns, schema=schema.chunks_schema(dim))
    for start in range(0, n, WRITE_ROWS):
        db.chunks.add(table.slice(start, WRITE_ROWS))
    del table, columns
    before = _peak_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    (indexes._create_whole_vector_index if whole else create_vector_index)(db.chunks)
    built = {
        "build_wall_s": round(time.perf_counter() - wall, 1),
        "build_cpu_s": round(time.process_time() - cpu, 1),
        "peak_rss_before_build_mb": before,
        "peak_rss_after_build_mb": _peak_mb(),
        "segments": db.chunks.index_stats(VECTOR_INDEX).num_indices,
    }
    print(f"vector index over {n} rows: {built}", file=sys.stderr, flush=True)
    (path.parent / f"{path.name}.build.json").write_text(json.dumps(built))
    return built


def _peak_mb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmHWM"))


def measure(path: Path, vectors: np.ndarray, queries: np.ndarray, efs: list[int]) -> dict:
    """Recall@10 and per-query wall/CPU p50 of the ANN search at each ef, refined 5 x k as search does."""
    exact = [set(np.argsort(-(vectors @ q))[:10].tolist()) for q in queries]
    table = async_table(open_database(Location("ef", str(path))).chunks)

    async def run() -> dict:
        out = {}
        for ef in efs:

            async def search(q: np.ndarray, ef: int = ef) -> list[int]:
                ask = table.query().nearest_to(q).column("vector").distance_type("cosine")
                rows = await ask.refine_factor(5).ef(ef).select(["id"]).limit(10).to_arrow()
                return [int(i[1:]) for i in rows.column("id").to_pylist()]

            for q in queries[:5]:
                await search(q)  # warm
            recall, wall, cpu = [], [], []
            for q, best in zip(queries, exact, strict=True):
                w, c = time.perf_counter(), time.process_time()
                found = await search(q)
                wall.append(time.perf_counter() - w)
                cpu.append(time.process_time() - c)
                recall.append(len(set(found) & best) / 10)
            out[str(ef)] = {
                "recall_at_10": round(float(np.mean(recall)), 4),
                "min_recall": round(float(np.min(recall)), 2),
                "wall_p50_ms": round(float(np.median(wall)) * 1000, 2),
                "cpu_p50_ms": round(float(np.median(cpu)) * 1000, 2),
            }
            print(f"ef {ef}: {out[str(ef)]}", file=sys.stderr, flush=True)
        return out

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/haiku-ef"))
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "cisi")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--efs", default=EFS, help="search breadths to measure, comma-separated")
    parser.add_argument("--whole", action="store_true", help="one graph over every row (the old build)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    per_doc, sentences, queries = _embedded(args.work, args.data)
    vectors = _chunks(per_doc, sentences, args.size)
    layout = "whole" if args.whole else f"seg{vector_segments.SEGMENT_ROWS}"
    path = args.work / f"ef{args.size}-{layout}.lancedb"
    built_file = args.work / f"{path.name}.build.json"
    built = json.loads(built_file.read_text()) if path.exists() else _database(path, vectors, args.whole)
    efs = [int(e) for e in args.efs.split(",")]
    report = {
        "chunks": args.size,
        "layout": layout,
        "sentences": len(sentences),
        "queries": len(queries),
        **built,
        "default_ef": ann_ef(args.size, 10, segments=built["segments"] or 1),
        "load_average": round(os.getloadavg()[0], 2),
        "by_ef": measure(path, vectors, queries, efs),
    }
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
