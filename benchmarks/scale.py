"""Search at scale: one database vs the same corpus over 4, on synthetic corpora of 10k to 1M chunks.

Vectors come from a fast deterministic hashing embedder served on 127.0.0.1 (the bundled model is far
too slow to embed a million chunks here). Reports ingest chunks/s (`add-src` through the server, and
the store's write path alone), p50/p95 per search type with the query embedding excluded, the
fan-out/single ratio, ANN recall@10 against exact search, and peak memory.

    python benchmarks/scale.py --sizes 10000,100000 --work /tmp/haiku-scale [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from haiku_cli.databases import fanout  # noqa: E402
from haiku_cli.databases.pool import DatabasePool  # noqa: E402
from haiku_cli.databases.selection import Selection  # noqa: E402
from haiku_cli.store import (  # noqa: E402
    DocumentRecord,
    DocumentWrite,
    EmbedderSpec,
    Location,
    NewChunk,
    open_database,
)
from haiku_cli.store.indexes import index_states  # noqa: E402
from haiku_cli.store.maintenance import after_write  # noqa: E402
from haiku_cli.store.transaction import atomic_write  # noqa: E402
from haiku_cli.store.writes import new_id, write_documents  # noqa: E402
from tests.support.hash_embedder import hash_vectors, serve_hash_embedder  # noqa: E402

DIMENSION = 384
EMBEDDER = "ollama:hash"
CHUNKS_PER_DOC = 10
TOPICS = 400
SPLIT = 4
QUERIES = 60
WRITE_BATCH = 5_000


class Corpus:
    """Documents of ~10 chunks of ~50 words: Zipf-distributed general words mixed with a topic's words."""

    def __init__(self, seed: int = 7) -> None:
        rng = np.random.default_rng(seed)
        syllables = [a + b for a in "bdfgklmnprstvz" for b in ("a", "e", "i", "o", "u", "ai", "ou")]
        words = {"".join(rng.choice(syllables, size=rng.integers(2, 5))) for _ in range(60_000)}
        self.vocab = np.array(sorted(words))
        ranks = np.arange(1, len(self.vocab) + 1)
        self.p = (1 / ranks) / (1 / ranks).sum()
        self.topics = [rng.choice(len(self.vocab), size=200, replace=False) for _ in range(TOPICS)]

    def document(self, doc: int) -> tuple[str, list[str]]:
        rng = np.random.default_rng(doc)
        topic = self.topics[doc % TOPICS]
        title = " ".join(self.vocab[rng.choice(topic, size=3)]).title()
        sections = []
        for _ in range(CHUNKS_PER_DOC):
            n = int(rng.integers(35, 70))
            general = rng.choice(len(self.vocab), size=n, p=self.p)
            local = rng.choice(topic, size=n)
            picks = np.where(rng.random(n) < 0.35, local, general)
            sections.append(" ".join(self.vocab[picks]) + ".")
        return title, sections

    def query(self, rng: np.random.Generator, docs: int) -> str:
        _, sections = self.document(int(rng.integers(docs)))
        words = sections[int(rng.integers(len(sections)))].rstrip(".").split()
        start = int(rng.integers(max(1, len(words) - 6)))
        return " ".join(words[start : start + int(rng.integers(3, 7))])


def _writes(corpus: Corpus, docs: list[int]) -> list[DocumentWrite]:
    out = []
    for doc in docs:
        title, sections = corpus.document(doc)
        texts = [f"{title} > Part {i}\n\n{s}" for i, s in enumerate(sections)]
        vectors = hash_vectors(texts, DIMENSION)
        now = datetime.now(UTC)
        record = DocumentRecord(
            id=new_id(), uri=f"file:///corpus/doc{doc}.md", title=title, content="\n\n".join(sections),
            content_hash=str(doc), created_at=now, updated_at=now,
        )  # fmt: skip
        chunks = [
            NewChunk(order=i, text=s, heading_path=[f"Part {i}"], search_text=t, vector=v.tolist())
            for i, (s, t, v) in enumerate(zip(sections, texts, vectors, strict=True))
        ]
        out.append(DocumentWrite(document=record, chunks=chunks))
    return out


def build(corpus: Corpus, path: Path, docs: list[int]) -> float:
    """Write documents through the store's write path (one all-or-nothing write); returns chunks/s."""
    db = open_database(Location(path.stem, str(path)), create_with=EmbedderSpec(EMBEDDER, DIMENSION))
    start = time.perf_counter()
    with atomic_write(db):
        for i in range(0, len(docs), WRITE_BATCH // CHUNKS_PER_DOC):
            batch = docs[i : i + WRITE_BATCH // CHUNKS_PER_DOC]
            write_documents(db, _writes(corpus, batch))
    after_write(db)
    return len(docs) * CHUNKS_PER_DOC / (time.perf_counter() - start)


def add_src_rate(corpus: Corpus, work: Path, docs: int) -> float:
    """Whole `haiku add-src` of Markdown files through the embedding server, in chunks/s."""
    from benchmarks.common import haiku

    folder = work / "files"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for doc in range(docs):
        title, sections = corpus.document(doc)
        body = "".join(f"## Part {i}\n\n{s}\n\n" for i, s in enumerate(sections))
        (folder / f"doc{doc}.md").write_text(f"# {title}\n\n{body}", encoding="utf-8")
    with serve_hash_embedder(DIMENSION) as url:
        config = work / "config.toml"
        config.write_text(f'[embedder]\nmodel = "{EMBEDDER}"\nbase_url = "{url}"\n', encoding="utf-8")
        start = time.perf_counter()
        haiku(["add-src", str(folder), "--db", str(work / "addsrc.lancedb")], config)
        return docs * CHUNKS_PER_DOC / (time.perf_counter() - start)


async def _latencies(locations: list[Location], queries: list[str], kind: str) -> tuple[list[float], list]:
    pool = DatabasePool()
    vectors = {q: hash_vectors([q], DIMENSION)[0] for q in queries}

    async def embed(q: str) -> np.ndarray:  # precomputed: the query embedding is excluded
        return vectors[q]

    selection = Selection(tuple(locations))
    await fanout.search(pool, selection, queries[0], embed_query=embed, search_type=kind)  # warm-up
    times, results = [], []
    for q in queries:
        start = time.perf_counter()
        hits = await fanout.search(pool, selection, q, embed_query=embed, search_type=kind, limit=10)
        times.append(time.perf_counter() - start)
        results.append([h.chunk_id for h in hits])
    return times, results


def _exact_top10(path: Path, queries: list[str]) -> list[list[str]]:
    db = open_database(Location(path.stem, str(path)))
    out = []
    for q in queries:
        found = db.chunks.search(hash_vectors([q], DIMENSION)[0], vector_column_name="vector")
        rows = found.distance_type("cosine").bypass_vector_index().select(["id"]).limit(10).to_list()
        out.append([r["id"] for r in rows])
    return out


def _pct(values: list[float], p: float) -> float:
    return round(float(np.percentile(values, p)) * 1000, 2)


def run_size(corpus: Corpus, chunks: int, work: Path) -> dict:
    docs = chunks // CHUNKS_PER_DOC
    work = work / str(chunks)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    one = work / "one.lancedb"
    parts = [work / f"part{i}.lancedb" for i in range(SPLIT)]
    out: dict = {"chunks": chunks, "documents": docs}
    out["store_write_chunks_per_s"] = round(build(corpus, one, list(range(docs))), 1)
    for i, part in enumerate(parts):
        build(corpus, part, list(range(i, docs, SPLIT)))
    states = index_states(open_database(Location("one", str(one))).chunks)
    out["indexes"] = {s.name: {"rows": s.indexed_rows, "segments": s.segments} for s in states}
    rng = np.random.default_rng(chunks)
    queries = [corpus.query(rng, docs) for _ in range(QUERIES)]
    single = [Location("one", str(one))]
    split = [Location(p.stem, str(p)) for p in parts]
    for kind in ("fts", "vector", "hybrid"):
        t1, r1 = asyncio.run(_latencies(single, queries, kind))
        t4, _ = asyncio.run(_latencies(split, queries, kind))
        out[kind] = {
            "single_p50_ms": _pct(t1, 50),
            "single_p95_ms": _pct(t1, 95),
            "split4_p50_ms": _pct(t4, 50),
            "split4_p95_ms": _pct(t4, 95),
            "fanout_over_single_p50": round(statistics.median(t4) / statistics.median(t1), 2),
        }
        if kind == "vector":
            exact = _exact_top10(one, queries)
            recall = [len(set(a) & set(e)) / max(len(e), 1) for a, e in zip(r1, exact, strict=True)]
            out["vector"]["recall_at_10"] = round(float(np.mean(recall)), 4)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="chunk counts, comma-separated")
    parser.add_argument("--work", type=Path, default=Path("/tmp/haiku-scale"))
    parser.add_argument("--add-src-docs", type=int, default=1000, help="documents for the add-src rate")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    corpus = Corpus()
    report: dict = {"sizes": []}
    if args.add_src_docs:
        rate = add_src_rate(corpus, args.work, args.add_src_docs)
        report["add_src_chunks_per_s"] = round(rate, 1)
        if not args.json:
            print(f"add-src through the embedding server: {rate:.0f} chunks/s", flush=True)
    for size in (int(s) for s in args.sizes.split(",")):
        result = run_size(corpus, size, args.work)
        report["sizes"].append(result)
        if not args.json:
            print(json.dumps(result, indent=1), flush=True)
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
