"""Search at scale: one database vs the same corpus over 4, on synthetic corpora of 10k to 1M chunks.

Vectors come from a fast deterministic hashing embedder served on 127.0.0.1 (the bundled model is far
too slow to embed a million chunks here). The large databases are written by a bulk builder: the
embedder's vectors computed with numpy, rows written as Arrow tables in 50k-chunk batches with the
store's schema and search lengths, then the indexes made by the store's own per-write upkeep, so each
is a database haiku opens as any other. Reports ingest chunks/s (`add-src` through the server, the
store's write path alone, and the bulk builder), p50/p95 per search type with the query embedding
excluded, the fan-out/single ratio, ANN recall@10 against exact search, and peak memory.

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
import pyarrow as pa

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
    indexes,
    open_database,
    schema,
)
from haiku_cli.store.blocking import wait  # noqa: E402
from haiku_cli.store.database import Database  # noqa: E402
from haiku_cli.store.document_writes import new_id, write_documents  # noqa: E402
from haiku_cli.store.indexes import analyze, index_states  # noqa: E402
from haiku_cli.store.maintenance import after_write  # noqa: E402
from haiku_cli.store.transaction import atomic_write  # noqa: E402
from haiku_cli.store.writer_lock import exclusive  # noqa: E402
from tests.support.hash_embedder import hash_vectors, serve_hash_embedder, word_slot  # noqa: E402

DIMENSION = 384
EMBEDDER = "ollama:hash"
CHUNKS_PER_DOC = 10
TOPICS = 400
SPLIT = 4
QUERIES = 60
WRITE_BATCH = 5_000
BULK_BATCH = 50_000  # chunks per Arrow write: one data file each


class Corpus:
    """Documents of ~10 chunks of ~50 words: Zipf-distributed general words mixed with a topic's words."""

    def __init__(self, seed: int = 7) -> None:
        rng = np.random.default_rng(seed)
        syllables = [a + b for a in "bdfgklmnprstvz" for b in ("a", "e", "i", "o", "u", "ai", "ou")]
        words = {"".join(rng.choice(syllables, size=rng.integers(2, 5))) for _ in range(60_000)}
        self.vocab = np.array(sorted(words))
        ranks = np.arange(1, len(self.vocab) + 1)
        self.cdf = np.cumsum(1 / ranks) / (1 / ranks).sum()
        self.topics = [rng.choice(len(self.vocab), size=200, replace=False) for _ in range(TOPICS)]
        # Each vocabulary word's hashed slot and sign, so vectors are summed without hashing per word.
        slots = [word_slot(str(w), DIMENSION) for w in self.vocab]
        self.slot = np.array([s for s, _ in slots], dtype=np.int64)
        self.sign = np.array([s for _, s in slots], dtype=np.float32)

    def word_ids(self, doc: int) -> tuple[np.ndarray, list[np.ndarray]]:
        """The title's and each section's word ids (deterministic per document)."""
        rng = np.random.default_rng(doc)
        topic = self.topics[doc % TOPICS]
        title = topic[rng.integers(len(topic), size=3)]
        lengths = rng.integers(35, 70, size=CHUNKS_PER_DOC)
        total = int(lengths.sum())
        general = np.minimum(np.searchsorted(self.cdf, rng.random(total)), len(self.vocab) - 1)
        local = topic[rng.integers(len(topic), size=total)]
        picks = np.where(rng.random(total) < 0.35, local, general)
        return title, np.split(picks, np.cumsum(lengths)[:-1])

    def document(self, doc: int) -> tuple[str, list[str]]:
        title, sections = self.word_ids(doc)
        return " ".join(self.vocab[title]).title(), [" ".join(self.vocab[s]) + "." for s in sections]

    def query(self, rng: np.random.Generator, docs: int) -> str:
        _, sections = self.document(int(rng.integers(docs)))
        words = sections[int(rng.integers(len(sections)))].rstrip(".").split()
        start = int(rng.integers(max(1, len(words) - 6)))
        return " ".join(words[start : start + int(rng.integers(3, 7))])


def _search_text(title: str, order: int, section: str) -> str:
    return f"{title} > Part {order}\n\n{section}"


def _writes(corpus: Corpus, docs: list[int]) -> list[DocumentWrite]:
    out = []
    for doc in docs:
        title, sections = corpus.document(doc)
        texts = [_search_text(title, i, s) for i, s in enumerate(sections)]
        vectors = hash_vectors(texts, DIMENSION)
        now = datetime.now(UTC)
        record = DocumentRecord(
            id=new_id(), uri=_uri(doc), title=title, content="\n\n".join(sections),
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


def _vectors(corpus: Corpus, word_ids: list[np.ndarray], orders: np.ndarray) -> np.ndarray:
    """`hash_vectors` of the chunks' search texts, summed with numpy from the words' precomputed slots."""
    n = len(word_ids)
    # "Part" and the section number are words of the search text too.
    extra = [word_slot(w, DIMENSION) for w in ["part", *map(str, range(CHUNKS_PER_DOC))]]
    extra_slot = np.array([slot for slot, _ in extra])
    extra_sign = np.array([sign for _, sign in extra], dtype=np.float32)
    chunk = np.arange(n)
    rows = np.concatenate([np.repeat(chunk, [len(w) for w in word_ids]), chunk, chunk])
    flat = np.concatenate(word_ids)
    slots = np.concatenate([corpus.slot[flat], np.full(n, extra_slot[0]), extra_slot[1 + orders]])
    signs = np.concatenate([corpus.sign[flat], np.full(n, extra_sign[0]), extra_sign[1 + orders]])
    out = np.bincount(rows * DIMENSION + slots, weights=signs, minlength=n * DIMENSION)
    out = out.reshape(n, DIMENSION).astype(np.float32)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


def _uri(doc: int) -> str:
    return f"file:///corpus/doc{doc}.md"


def _batch_tables(corpus: Corpus, db: Database, docs: list[int]) -> tuple[pa.Table, pa.Table]:
    """Documents and chunks rows for `docs`, column by column, as the store's write path makes them."""
    now = datetime.now(UTC)
    doc_ids, titles, contents = [new_id() for _ in docs], [], []
    chunk_words, chunk_docs, chunk_titles, chunk_uris, texts, search_texts = [], [], [], [], [], []
    for doc, doc_id in zip(docs, doc_ids, strict=True):
        title_ids, section_ids = corpus.word_ids(doc)
        title = " ".join(corpus.vocab[title_ids]).title()
        sections = [" ".join(corpus.vocab[s]) + "." for s in section_ids]
        titles.append(title)
        contents.append("\n\n".join(sections))
        for i, (ids, section) in enumerate(zip(section_ids, sections, strict=True)):
            chunk_words.append(np.concatenate([title_ids, ids]))
            chunk_docs.append(doc_id)
            chunk_titles.append(title)
            chunk_uris.append(_uri(doc))
            texts.append(section)
            search_texts.append(_search_text(title, i, section))
    orders = np.tile(np.arange(CHUNKS_PER_DOC, dtype=np.int32), len(docs))
    terms = wait(analyze(db.chunks, search_texts))
    documents = pa.table(
        {
            "id": doc_ids,
            "uri": [_uri(d) for d in docs],
            "title": titles,
            "metadata": ["{}"] * len(docs),
            "content": contents,
            "content_hash": [str(d) for d in docs],
            "created_at": [now] * len(docs),
            "updated_at": [now] * len(docs),
        },
        schema=schema.documents_schema(),
    )
    vectors = _vectors(corpus, chunk_words, orders)
    chunks = pa.table(
        {
            "id": [new_id() for _ in texts],
            "document_id": chunk_docs,
            # Each chunk's copy of its document's fields, as the store writes them (schema version 2).
            "document_uri": chunk_uris,
            "document_title": chunk_titles,
            "document_metadata": ["{}"] * len(texts),
            "order": orders,
            "text": texts,
            "search_text": search_texts,
            # Lengths and terms exactly as the store makes them (the same analyzer call).
            "search_tokens": [len(t) for t in terms],
            schema.TERMS_FIELD: [" ".join(t) for t in terms],
            "heading_path": [[f"Part {i}"] for i in orders],
            "pages": [[] for _ in texts],
            # Where each chunk stands in its document (schema version 3): left unknown, as in a database
            # vacuum upgraded; a search reads the columns all the same.
            **{name: pa.nulls(len(texts), pa.int32()) for name in schema.SPAN_FIELDS},
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION),
        },
        schema=schema.chunks_schema(DIMENSION),
    )
    return documents, chunks


def bulk_build(corpus: Corpus, path: Path, docs: list[int]) -> dict:
    """Write a corpus as Arrow tables in large batches straight into a new database, then its indexes.

    The rows are the ones the store's write path would make (same schema, ids, search lengths and
    vectors); only the per-chunk Python objects are skipped. Returns rows/s for writing and overall.
    """
    db = open_database(Location(path.stem, str(path)), create_with=EmbedderSpec(EMBEDDER, DIMENSION))
    sample = docs[:3]
    if sample:  # the numpy vectors must be the embedding server's, or recall and search mean nothing
        _, chunks = _batch_tables(corpus, db, sample)
        expected = hash_vectors(chunks.column("search_text").to_pylist(), DIMENSION)
        assert np.allclose(np.stack(chunks.column("vector").to_pylist()), expected, atol=1e-5)
    start = time.perf_counter()
    with exclusive(db):
        for i in range(0, len(docs), BULK_BATCH // CHUNKS_PER_DOC):
            documents, chunks = _batch_tables(corpus, db, docs[i : i + BULK_BATCH // CHUNKS_PER_DOC])
            db.documents.add(documents)
            db.chunks.add(chunks)
    written = time.perf_counter() - start
    after_write(db)  # the indexes, as the last write of any command makes them
    total = time.perf_counter() - start
    rows = len(docs) * CHUNKS_PER_DOC
    return {
        "write_chunks_per_s": round(rows / written, 1),
        "with_indexes_chunks_per_s": round(rows / total, 1),
        "index_seconds": round(total - written, 1),
    }


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
    await fanout.search_set(pool, selection, queries[0], embed_query=embed, search_type=kind)  # warm-up
    times, results = [], []
    for q in queries:
        start = time.perf_counter()
        hits = await fanout.search_set(pool, selection, q, embed_query=embed, search_type=kind, limit=10)
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


def run_size(corpus: Corpus, chunks: int, work: Path, queries_n: int = QUERIES) -> dict:
    docs = chunks // CHUNKS_PER_DOC
    work = work / str(chunks)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    one = work / "one.lancedb"
    parts = [work / f"part{i}.lancedb" for i in range(SPLIT)]
    out: dict = {"chunks": chunks, "documents": docs}
    out["bulk_build_one"] = bulk_build(corpus, one, list(range(docs)))
    out["bulk_build_split4"] = [
        bulk_build(corpus, part, list(range(i, docs, SPLIT))) for i, part in enumerate(parts)
    ]
    out["peak_rss_build_mb"] = _peak_rss_mb()
    states = wait(index_states(open_database(Location("one", str(one))).chunks))
    out["indexes"] = {s.name: {"rows": s.indexed_rows, "segments": s.segments} for s in states}
    rng = np.random.default_rng(chunks)
    queries = [corpus.query(rng, docs) for _ in range(queries_n)]
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
        if kind == "vector" and indexes.VECTOR_INDEX in out["indexes"]:
            exact = _exact_top10(one, queries)
            recall = [len(set(a) & set(e)) / max(len(e), 1) for a, e in zip(r1, exact, strict=True)]
            out["vector"]["recall_at_10"] = round(float(np.mean(recall)), 4)
    out["peak_rss_mb"] = _peak_rss_mb()
    return out


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="chunk counts, comma-separated")
    parser.add_argument("--work", type=Path, default=Path("/tmp/haiku-scale"))
    parser.add_argument("--add-src-docs", type=int, default=1000, help="documents for the add-src rate")
    parser.add_argument(
        "--store-write-docs", type=int, default=300, help="documents for the store's own write path rate"
    )
    parser.add_argument("--queries", type=int, default=QUERIES, help="queries per search type")
    parser.add_argument(
        "--no-ann",
        action="store_true",
        help="no vector index whatever the size: vector search scans every row (its build is the slow part)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    corpus = Corpus()
    report: dict = {"sizes": [], "ann": not args.no_ann}
    if args.no_ann:
        indexes.VECTOR_INDEX_MIN_ROWS = sys.maxsize
    if args.add_src_docs:
        rate = add_src_rate(corpus, args.work, args.add_src_docs)
        report["add_src_chunks_per_s"] = round(rate, 1)
        if not args.json:
            print(f"add-src through the embedding server: {rate:.0f} chunks/s", flush=True)
    if args.store_write_docs:
        shutil.rmtree(args.work / "store-write.lancedb", ignore_errors=True)
        rate = build(corpus, args.work / "store-write.lancedb", list(range(args.store_write_docs)))
        report["store_write_chunks_per_s"] = round(rate, 1)
        if not args.json:
            print(f"store write path (write_documents): {rate:.0f} chunks/s", flush=True)
    for size in (int(s) for s in args.sizes.split(",")):
        result = run_size(corpus, size, args.work, args.queries)
        report["sizes"].append(result)
        if not args.json:
            print(json.dumps(result, indent=1), flush=True)
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
