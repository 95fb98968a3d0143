"""A split ranks as one database does: every query's top 10 over 2, 4 and 8 databases against one.

The same chunks in one database and split over N (document i to part i % N), searched through
`fanout.search_set` (fts, vector, hybrid; query vectors precomputed), top 10 compared by text in order.
Two corpora: `scale.py`'s synthetic corpus (its 60 queries; the databases `fanout_floor.py --build`
leaves under `--work`) and CISI (its 112 queries; chunked into passages here, hashed-word vectors, built
under `--work/cisi` on first use and reused). The goal is 0 mismatches. Where a vector index is searched
(the synthetic corpus: CISI's tables are below the size that gets one), top 10s that differ are checked
again with the graphs searched exhaustively: `from_ann_recall` counts those the index's approximation
alone set apart, `ranked_apart` the rest (each listed with the first rank where the lists differ).

    python benchmarks/split_identity.py [--work benchmarks/corpora] [--size 100000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.fanout_floor import CORPORA, build, layout  # noqa: E402
from benchmarks.scale import CHUNKS_PER_DOC, DIMENSION, EMBEDDER, QUERIES, Corpus  # noqa: E402
from haiku_cli.databases import fanout  # noqa: E402
from haiku_cli.databases.pool import DatabasePool  # noqa: E402
from haiku_cli.databases.selection import Selection  # noqa: E402
from haiku_cli.search import candidates  # noqa: E402
from haiku_cli.store import DocumentRecord, DocumentWrite, EmbedderSpec, Location, NewChunk, open_database  # noqa: E402
from haiku_cli.store.document_writes import new_id, write_documents  # noqa: E402
from tests.support.hash_embedder import hash_vectors  # noqa: E402

KINDS = ("fts", "vector", "hybrid")
PARTS = (2, 4, 8)
_PASSAGE_WORDS = 80  # CISI abstracts run to a few hundred words: a few passages each
# ../shared beside a checkout, or beside the folder of worktrees holding it.
CISI = next(
    (p for p in (REPO.parent / "shared/data/cisi", REPO.parent.parent / "shared/data/cisi") if p.exists()),
    REPO.parent / "shared/data/cisi",
)


def _passages(text: str) -> list[str]:
    words = text.split()
    return [" ".join(words[i : i + _PASSAGE_WORDS]) for i in range(0, max(len(words), 1), _PASSAGE_WORDS)]


def _cisi_writes(docs: Sequence[dict]) -> list[DocumentWrite]:
    now = datetime.now(UTC)
    out = []
    for doc in docs:
        passages = _passages(doc["text"])
        texts = [f"{doc['title']}\n\n{p}" for p in passages]
        vectors = hash_vectors(texts, DIMENSION)
        record = DocumentRecord(
            id=new_id(), uri=f"file:///cisi/{doc['_id']}.txt", title=doc["title"], content=doc["text"],
            content_hash=doc["_id"], created_at=now, updated_at=now,
        )  # fmt: skip
        chunks = [
            NewChunk(order=i, text=p, search_text=t, vector=v.tolist())
            for i, (p, t, v) in enumerate(zip(passages, texts, vectors, strict=True))
        ]
        out.append(DocumentWrite(document=record, chunks=chunks))
    return out


def cisi_layout(folder: Path, parts: int, data: Path) -> list[Location]:
    """CISI in one database (parts 1) or split `parts` ways, written on first use."""
    if parts == 1:
        locations = [Location("one", str(folder / "one.lancedb"))]
    else:
        locations = [
            Location(f"part{i}", str(folder / f"split{parts}" / f"part{i}.lancedb")) for i in range(parts)
        ]
    if not all(Path(loc.uri).exists() for loc in locations):
        docs = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines()]
        docs.sort(key=lambda d: int(d["_id"]))
        for i, loc in enumerate(locations):
            print(f"building {loc.uri}", file=sys.stderr, flush=True)
            Path(loc.uri).parent.mkdir(parents=True, exist_ok=True)
            db = open_database(loc, create_with=EmbedderSpec(EMBEDDER, DIMENSION))
            write_documents(db, _cisi_writes(docs[i::parts]))
    return locations


def cisi_queries(data: Path) -> list[str]:
    return [json.loads(line)["text"] for line in (data / "queries.jsonl").read_text().splitlines()]


async def _top10(
    pool: DatabasePool, locations: list[Location], query: str, kind: str
) -> list[tuple[float, str]]:
    vector = hash_vectors([query], DIMENSION)[0]

    async def embed(_q: str) -> np.ndarray:
        return vector

    hits = await fanout.search_set(
        pool, Selection(tuple(locations)), query, embed_query=embed, search_type=kind,  # type: ignore[arg-type]
        limit=10, check_sources=False,
    )  # fmt: skip
    return [(h.score, h.content) for h in hits]


def _difference(i: int, one: list[tuple[float, str]], split: list[tuple[float, str]]) -> dict:
    """Where two top 10s first differ, and what each holds there."""
    rank = next(r for r in range(max(len(one), len(split))) if one[r : r + 1] != split[r : r + 1])

    def at(hits: list[tuple[float, str]]) -> list | None:
        return [round(hits[rank][0], 6), hits[rank][1][:60]] if rank < len(hits) else None

    return {"query": i, "rank": rank + 1, "one": at(one), "split": at(split)}


@contextmanager
def exhaustive_graph_search() -> Iterator[None]:
    """Vector search through the HNSW graph as near exact as it goes: every row's breadth, wide refining."""
    saved = (candidates.ann_ef, candidates.pool_ef, candidates._REFINE_FACTOR, candidates._POOL_REFINE_FACTOR)
    candidates.ann_ef = candidates.pool_ef = lambda rows, *_a, **_k: max(rows, 1)  # type: ignore[assignment]
    candidates._REFINE_FACTOR = candidates._POOL_REFINE_FACTOR = 20
    try:
        yield
    finally:
        candidates.ann_ef, candidates.pool_ef, candidates._REFINE_FACTOR, candidates._POOL_REFINE_FACTOR = (
            saved
        )


def compare(layouts: dict[int, list[Location]], queries: list[str], kinds: Sequence[str] = KINDS) -> dict:
    """Every query's top 10 per kind, each split against one database (by text, in order).

    A vector index's search is approximate, and a graph over a split's part is not the graph over the
    whole: where the top 10s differ, they are compared again with the graphs searched exhaustively.
    Those that then agree differ by the index's recall alone (`from_ann_recall`); the rest rank apart.
    """

    async def texts(pool: DatabasePool, parts: int, q: str, kind: str) -> list[str]:
        return [t for _, t in await _top10(pool, layouts[parts], q, kind)]

    async def run() -> dict:
        pool = DatabasePool()
        out: dict = {}
        for kind in kinds:
            one = [await _top10(pool, layouts[1], q, kind) for q in queries]
            for parts in sorted(p for p in layouts if p > 1):
                mismatches, recall = [], 0
                for i, q in enumerate(queries):
                    split = await _top10(pool, layouts[parts], q, kind)
                    if [t for _, t in split] == [t for _, t in one[i]]:
                        continue
                    if kind != "fts":
                        with exhaustive_graph_search():
                            if await texts(pool, 1, q, kind) == await texts(pool, parts, q, kind):
                                recall += 1
                                continue
                    mismatches.append(_difference(i, one[i], split))
                out[f"{kind}/{parts}"] = {
                    "queries": len(queries),
                    "mismatches": len(mismatches) + recall,
                    "from_ann_recall": recall,
                    "ranked_apart": len(mismatches),
                    "examples": mismatches[:5],
                }
        return out

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=CORPORA, help="where built corpora are kept")
    parser.add_argument("--size", type=int, default=100_000, help="synthetic corpus size (0: CISI alone)")
    parser.add_argument("--parts", default=",".join(map(str, PARTS)))
    parser.add_argument("--build", action="store_true", help="write the synthetic layouts missing first")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--data", type=Path, default=CISI, help="CISI in BEIR's layout")
    parser.add_argument("--no-cisi", action="store_true", help="the synthetic corpus alone")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    parts = [1, *(int(p) for p in args.parts.split(",") if p)]
    kinds = args.kinds.split(",")
    report: dict = {"load_average_start": round(os.getloadavg()[0], 2)}
    if args.size:
        corpus = Corpus()
        folder = args.work / str(args.size)
        if args.build:
            for n in parts:
                build(corpus, folder, args.size, n)
        rng = np.random.default_rng(args.size)  # the queries scale.py and query_path.py ask
        queries = [corpus.query(rng, args.size // CHUNKS_PER_DOC) for _ in range(QUERIES)]
        report["synthetic"] = {
            "chunks": args.size,
            **compare({n: layout(folder, n) for n in parts}, queries, kinds),
        }
    cisi = {} if args.no_cisi else {n: cisi_layout(args.work / "cisi", n, args.data) for n in parts}
    if cisi:
        report["cisi"] = compare(cisi, cisi_queries(args.data), kinds)
    checked = [
        v for corpus in ("synthetic", "cisi") for v in report.get(corpus, {}).values() if isinstance(v, dict)
    ]
    report["queries_checked"] = sum(v["queries"] for v in checked)
    report["mismatches"] = sum(v["mismatches"] for v in checked)
    report["ranked_apart"] = sum(v["ranked_apart"] for v in checked)
    report["from_ann_recall"] = sum(v["from_ann_recall"] for v in checked)
    report["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
