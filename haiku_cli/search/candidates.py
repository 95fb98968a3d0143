"""Vector and full-text candidates from one database, each with the scores fusion needs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from haiku_cli.errors import InputError, exception_reason
from haiku_cli.search.lookups import Reads, Shape, Unbounded, each
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.failures import is_read_failure, storage_failure
from haiku_cli.store.index_reads import FTS_INDEX, VECTOR_INDEX
from haiku_cli.store.reads import document_ids, in_list
from haiku_cli.store.schema import DOCUMENT_FIELDS, SPAN_FIELDS, TERMS_FIELD

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

SearchType = Literal["hybrid", "vector", "fts"]

_COLUMNS = ["id", "document_id", "text", "heading_path", "pages"]  # what a hit shows; each costs a read
# A chunk's copy of its document's fields (schema version 2): hits are built without a document lookup.
# Asked of every table; a lookup leaves out those an old layout's table lacks.
_DOCUMENT_COLUMNS = list(DOCUMENT_FIELDS.values())
_SPAN_COLUMNS = list(SPAN_FIELDS)
_SHOWN_COLUMNS = _COLUMNS + _DOCUMENT_COLUMNS + _SPAN_COLUMNS
assert _SPAN_COLUMNS == ["char_start", "char_end", "line_start", "line_end"], "see _shown"
_KEY_COLUMNS = ["id"]  # a lean candidate's: its identity (ties rank by it); its row id comes with it


# An ANN index ranks by quantised distances; re-ranking this many times k by exact distance fixes
# their order (a wider factor recalls no more and reads more vectors: benchmarks/ef_real.py).
_REFINE_FACTOR = 5
# Hybrid search keeps its 50 vector candidates only as a pool for fusion, which ranks by their exact
# similarity (a refine factor of 1 still re-scores the k found exactly). A wider factor changes which
# candidates make the pool only at its margin, never the fused top 10, and costs CPU in every database
# searched.
_POOL_REFINE_FACTOR = 1
# How widely the HNSW graph is searched, per chunk in the table. On the bundled model's embeddings a
# table of 100k recalls the exact top 10 in full well below the floor, so it is searched at the floor,
# a margin over the breadth where every query recalled at least 9 of 10. Hashed-word test vectors, far
# harder for a graph, recall less there. Smaller tables need relatively more, and there the search's
# fixed cost dominates, so the breadth never drops below _EF_MIN. The breadth grows with the table to
# the cap, which 1M real-embedding chunks need no more than: past it recall@10 barely rises while CPU
# keeps growing (benchmarks/ef_real.py measures recall and CPU per ef on real embeddings).
_EF_PER_ROW = 1 / 83
_EF_MIN = 1_200
_EF_MAX = 4_000
# Hybrid search's pool is searched less widely than vector search: fusion re-ranks it (see pool_ef),
# and at 1M chunks the cap keeps nearly every hybrid top 10 of a near-exact search in less time.
_POOL_EF_PER_ROW = 1 / 80
_POOL_EF_MAX = 2_000


def _breadth(rows: int, per_row: float, floor: int, cap: int, segments: int) -> int:
    whole = min(max(int(rows * per_row), floor), cap)
    if segments <= 1:
        return whole
    # An index in segments is searched one graph at a time at this breadth, and the top k merged: each
    # graph is searched as a table of its own rows (the floor shared among them, as among a fan-out's
    # databases), but all of them together no more widely than one graph over every row would be. On
    # the bundled model's embeddings the segments searched so recall the exact top 10 at least as well
    # as one graph does (benchmarks/ef_real.py searches the index in segments, as it is built).
    own = min(max(int(rows / segments * per_row), floor // segments), cap)
    return min(own, -(-whole // segments))


def ann_ef(rows: int, limit: int, parts: int = 1, segments: int = 1) -> int:
    """The HNSW search breadth for a table of `rows` chunks asked for `limit` refined neighbours, per
    segment of its index (`segments` graphs).

    A table searched as one of `parts` databases of a fan-out needs less than alone: the set's top
    `limit` is merged from every part's, so each part's floor is `_EF_MIN` shared among the parts
    (benchmarks/split_identity.py counts the top 10s a split's recall sets apart from one database's).
    """
    breadth = _breadth(rows, _EF_PER_ROW, _EF_MIN // max(parts, 1), _EF_MAX, segments)
    return max(limit * _REFINE_FACTOR, breadth)


def pool_ef(rows: int, limit: int, parts: int = 1, segments: int = 1) -> int:
    """The HNSW breadth for hybrid search's vector pool, narrower than vector search's.

    Fusion ranks the pool by exact similarity and BM25, so a neighbour the narrower search misses
    rarely reaches the top: the hybrid top 10 stays nearly that of a near-exact search, in less time
    (benchmarks/fanout_floor.py searches at this breadth). The pool is the set's top 50, deeper than
    vector search's top 10, so in a fan-out each part shares the floor with half as many: a wider search
    per part hardly changes how many split top 10s equal one database's (benchmarks/split_identity.py).
    In the largest tables the pool has its own, lower cap (`_POOL_EF_MAX`).
    """
    breadth = _breadth(rows, _POOL_EF_PER_ROW, _EF_MIN // max(parts // 2, 1), _POOL_EF_MAX, segments)
    # Each segment need only find the k the pool refines (1 x k); many of them at 5 x k would search
    # every graph of a large table together far more widely than one graph over every row.
    return max(limit * (_POOL_REFINE_FACTOR if segments > 1 else _REFINE_FACTOR), breadth)


@dataclass
class Candidate:
    """A chunk found in one database, with its cosine similarity and BM25 score (None: not retrieved)."""

    database: str
    chunk_id: str
    document_id: str
    text: str
    heading_path: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    # Its document's uri, title and metadata (JSON) as the chunk row holds them; None: an old layout's
    # row without them, looked up in the documents table when the candidate becomes a hit.
    document: tuple[str | None, str | None, str | None] | None = None
    # Where it stands in its document (SPAN_FIELDS, by name); empty for an older layout's row.
    span: dict[str, int | None] = field(default_factory=dict)
    # Only when asked for, what set-wide BM25 counts terms in: the stored terms of its search text
    # (schema version 4, as stored: separated by single spaces), else the text itself, to analyse.
    search_terms: str | None = None
    search_text: str = ""
    similarity: float | None = None
    bm25: float | None = None
    by_vector: bool = False  # among its database's nearest vectors (else found by full text alone)
    # Where a lean candidate's row is in the table version it was found in, to read what it shows (`show`).
    row_id: int | None = None
    version: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        """Identity across a fan-out: the same chunk id may live in two databases."""
        return (self.database, self.chunk_id)


async def chunk_filter(db: Database, document_filter: str | None) -> str | Literal[False] | None:
    """Turn a SQL filter over documents into one over chunks; False when no document matches."""
    if not document_filter:
        return None
    ids = await document_ids(db, where=document_filter)
    if not ids:
        return False
    return in_list("document_id", ids)


@dataclass(frozen=True)
class CandidateQuery:
    """What to find in each database of a search: up to k vector and k full-text candidates.

    With `with_search_text` the full-text candidates carry the terms their BM25 score was computed on
    (or, in an older layout, the text to analyse).
    `parts` is how many databases are searched together (vector search narrows in a fan-out).
    """

    text: str
    vector: np.ndarray | None
    search_type: SearchType
    k: int
    document_filter: str | None = None
    with_search_text: bool = False
    parts: int = 1
    lean: bool = False
    vector_ties: bool = True  # each database's top k with every chunk tied with its k-th (see fanout)

    async def find(self, db: Database, table: Any, shape: Shape, where: str | None) -> list[Candidate]:
        """The candidates among the chunks `where` selects in `table`, whose version has `shape`."""
        # Lean: what ranks a candidate and where its row is; what it shows is read for the final hits
        # alone (`show`): each column read costs about as much whatever its rows, and a hit shows many.
        columns = _KEY_COLUMNS if self.lean else shape.select(_SHOWN_COLUMNS)
        jobs = []
        if self.search_type in ("vector", "hybrid"):
            assert self.vector is not None
            q = table.query().nearest_to(self.vector).column("vector").distance_type("cosine")
            if VECTOR_INDEX in shape.indexes:
                vector_search = self.search_type == "vector"
                breadth = ann_ef if vector_search else pool_ef
                ef = breadth(shape.rows, self.k, self.parts, shape.vector_segments)
                q = q.refine_factor(_REFINE_FACTOR if vector_search else _POOL_REFINE_FACTOR).ef(ef)
            vector_query = _where(q, where).select([*columns, "_distance"])
            if self.vector_ties:
                jobs.append(_rows_through_ties(vector_query, self.lean, self.k, "_distance", 1))
            else:
                jobs.append(_rows(vector_query, self.lean, self.k))
        wants_text = self.search_type in ("fts", "hybrid") and bool(self.text.strip())
        if wants_text:
            counted = TERMS_FIELD if TERMS_FIELD in shape.columns else "search_text"
            extra = ["vector"] * (self.vector is not None) + [counted] * self.with_search_text
            q = table.query().nearest_to_text(self.text, columns="search_text")
            selected = shape.select([*columns, "_score", *extra])
            text_query = _where(q, where).select(selected)
            if self.with_search_text:  # rescored set-wide: bm25.rescore_set reads deeper where it must
                jobs.append(_rows(text_query, self.lean, self.k))
            else:
                jobs.append(_rows_through_ties(text_query, self.lean, self.k, "_score", max(self.k // 2, 1)))
        results = await _each_job(jobs)
        vector_rows = results.pop(0) if self.search_type in ("vector", "hybrid") else None
        text_rows = results.pop(0) if wants_text else None
        if isinstance(vector_rows, BaseException):
            raise vector_rows
        found = self._by_vector(db, vector_rows) if vector_rows is not None else {}
        if isinstance(text_rows, BaseException):
            if FTS_INDEX not in shape.indexes and isinstance(text_rows, Exception):
                return list(found.values())  # a table with no full-text index: vectors alone
            self._refuse(db, text_rows)
        if text_rows is not None and text_rows.num_rows:
            self._add_by_text(db, text_rows, found)
        if self.lean:
            for cand in found.values():
                cand.version = shape.version
        return list(found.values())

    def _by_vector(self, db: Database, rows: pa.Table) -> dict[str, Candidate]:
        found = {}
        for cand, distance in zip(*_candidates(db, rows, "_distance"), strict=True):
            cand.similarity = 1.0 - distance
            cand.by_vector = True
            found[cand.chunk_id] = cand
        return found

    def _add_by_text(self, db: Database, rows: pa.Table, found: dict[str, Candidate]) -> None:
        cands, scores = _candidates(db, rows, "_score")
        search_texts: list = [None] * len(cands)
        stored = TERMS_FIELD in rows.column_names
        if self.with_search_text:
            search_texts = rows.column(TERMS_FIELD if stored else "search_text").to_pylist()
        # Score full-text-only hits by exact cosine too, so fusion never treats "not in the vector top-k"
        # as "dissimilar" (one matrix product over the rows' vectors, not one per row).
        vector = self.vector
        similarities = _similarities(rows, vector) if vector is not None else [None] * len(cands)
        for new, score, search_text, similarity in zip(
            cands, scores, search_texts, similarities, strict=True
        ):
            cand = found.get(new.chunk_id, new)
            cand.bm25 = score
            if stored:
                cand.search_terms = search_text or ""  # written with every row (or by vacuum)
            else:
                cand.search_text = search_text or ""
            if cand.similarity is None:
                cand.similarity = similarity
            found[cand.chunk_id] = cand

    def _refuse(self, db: Database, error: BaseException) -> NoReturn:
        if not isinstance(error, Exception):
            raise error
        if is_read_failure(error):
            raise storage_failure(db.location, "cannot be read", error) from error
        reason = exception_reason(error, upto="line")
        raise InputError(f"full-text search failed for {self.text!r}: {reason}") from error


async def _each_job(jobs: Sequence[Awaitable[Any]]) -> list[Any]:
    """Each job's result or exception; one job awaited in place (a task per database searched costs
    more CPU than a full-text search's candidates take to build)."""
    if len(jobs) != 1:
        return await asyncio.gather(*jobs, return_exceptions=True)
    try:
        return [await jobs[0]]
    except Exception as exc:
        return [exc]


def _where(query: Any, where: str | None) -> Any:
    return query.where(where) if where else query


def _rows(query: Any, lean: bool, k: int) -> Any:
    return (query.with_row_id() if lean else query).limit(k).to_arrow()


async def _rows_through_ties(query: Any, lean: bool, k: int, score: str, beyond: int) -> pa.Table:
    """The top k by `score`, and every row scoring as the k-th: which of equally scored rows make a top
    k must not be the index's choice, or a chunk's place would depend on the database holding it (see
    fusion.tie_order). `beyond` rows more than k tell whether the k-th is tied past them (a vector
    search's cost grows with its limit, a full-text search's hardly: equal BM25 scores are common)."""
    if lean:
        query = query.with_row_id()
    asked = k + beyond
    rows = await query.limit(asked).to_arrow()
    while rows.num_rows == asked and k > 0:
        scores = rows.column(score)
        if scores[asked - 1].as_py() != scores[k - 1].as_py():
            break
        asked *= 2
        rows = await query.limit(asked).to_arrow()
    if rows.num_rows <= k or k == 0:
        return rows
    scores = rows.column(score).to_pylist()
    return rows.slice(0, k + sum(1 for s in scores[k:] if s == scores[k - 1]))


async def candidates_of(
    reads: Reads, dbs: Sequence[Database], query: CandidateQuery
) -> tuple[list[Shape], list[list[Candidate]]]:
    """Every database's candidates, found all at once, and the table version each came from; every
    candidate gets an exact cosine similarity when the query has a vector."""

    async def find(db: Database) -> tuple[Shape, list[Candidate]]:
        where = await chunk_filter(db, query.document_filter)
        table, shape = await reads.shape(db)
        if where is False or shape.rows == 0:  # no document matches: only the shape (for BM25 statistics)
            return shape, []
        return shape, await query.find(db, table, shape, where)

    found = await each([(db, reads.within(db, find(db))) for db in dbs])
    return [shape for shape, _ in found], [cands for _, cands in found]


async def vector_candidates(reads: Reads, db: Database, query: CandidateQuery) -> list[Candidate]:
    """One database's vector candidates for `query`, every chunk tied with its k-th among them."""
    where = await chunk_filter(db, query.document_filter)
    table, shape = await reads.shape(db)
    if where is False or shape.rows == 0:
        return []
    return await replace(query, search_type="vector", vector_ties=True).find(db, table, shape, where)


async def text_candidates(reads: Reads, db: Database, query: CandidateQuery) -> list[Candidate]:
    """One database's full-text candidates for `query` (its vector, if any, scores them)."""
    where = await chunk_filter(db, query.document_filter)
    table, shape = await reads.shape(db)
    if where is False or shape.rows == 0:
        return []
    found = await replace(query, search_type="fts").find(db, table, shape, where)
    return [c for c in found if c.bm25 is not None]


def find_candidates(
    db: Database,
    *,
    query: str,
    query_vector: np.ndarray | None,
    search_type: SearchType,
    k: int,
    document_filter: str | None = None,
    with_search_text: bool = False,
    parts: int = 1,
) -> list[Candidate]:
    """One database's candidates (see `CandidateQuery`), for synchronous code."""
    asked = CandidateQuery(query, query_vector, search_type, k, document_filter, with_search_text, parts)
    _, (found,) = wait(candidates_of(Reads(Unbounded()), [db], asked))
    return found


def _candidates(db: Database, rows: pa.Table, score: str) -> tuple[list[Candidate], list[float]]:
    """The rows as candidates, and their score column (read column by column: far cheaper than by row)."""
    scores = rows.column(score).to_pylist()
    if "_rowid" in rows.column_names:  # lean: shown later
        ids, row_ids = (rows.column(name).to_pylist() for name in ("id", "_rowid"))
        return [Candidate(db.name, i, "", "", row_id=r) for i, r in zip(ids, row_ids, strict=True)], scores
    return _shown(db, rows), scores


def _shown(db: Database, rows: pa.Table) -> list[Candidate]:
    # Column by column, each row's fields passed by position: a search builds hundreds of candidates.
    name, count = db.name, rows.num_rows
    ids, document_ids, texts, headings, pages = (rows.column(c).to_pylist() for c in _COLUMNS)
    names = rows.column_names
    documents: list = [None] * count
    if all(c in names for c in _DOCUMENT_COLUMNS):
        documents = list(zip(*(rows.column(c).to_pylist() for c in _DOCUMENT_COLUMNS), strict=True))
    spans: list = [{} for _ in range(count)]
    if all(c in names for c in _SPAN_COLUMNS):
        starts, ends, firsts, lasts = (rows.column(c).to_pylist() for c in _SPAN_COLUMNS)
        spans = [  # by name, as SPAN_FIELDS are (a dict display: a tenth of dict(zip(...))'s cost)
            {"char_start": a, "char_end": b, "line_start": c, "line_end": d}
            for a, b, c, d in zip(starts, ends, firsts, lasts, strict=True)
        ]
    return [
        Candidate(name, i, d, t, h or [], p or [], doc, span)
        for i, d, t, h, p, doc, span in zip(
            ids, document_ids, texts, headings, pages, documents, spans, strict=True
        )
    ]


async def show(reads: Reads, dbs: Sequence[Database], lean: Sequence[Candidate]) -> list[Candidate]:
    """Lean candidates with what a hit shows (text, place, document fields) read, one read per database,
    every database at once; a chunk gone from its table since it was found is left out."""
    by_db: dict[str, list[Candidate]] = {}
    for cand in lean:
        by_db.setdefault(cand.database, []).append(cand)
    holding = [db for db in dbs if db.name in by_db]
    read = await each([(db, reads.within(db, _shown_rows(reads, db, by_db[db.name]))) for db in holding])
    shown = {c.key: c for rows in read for c in rows}
    out = []
    for cand in lean:
        full = shown.get(cand.key)
        if full is not None:
            full.similarity, full.bm25, full.by_vector = cand.similarity, cand.bm25, cand.by_vector
            out.append(full)
    return out


async def _shown_rows(reads: Reads, db: Database, cands: list[Candidate]) -> list[Candidate]:
    table, shape = await reads.shape(db)
    columns = shape.select(_SHOWN_COLUMNS)
    # A row id says where a row sits in one table version: in another (the handle was moved on by a
    # concurrent search of a host, past a compaction or a delete) the rows are looked up by id.
    row_ids = [c.row_id for c in cands if c.row_id is not None and c.version == shape.version]
    found = _shown(db, await reads.take(db, table, shape.version, row_ids, columns)) if row_ids else []
    wanted = {c.chunk_id for c in cands}
    found = [c for c in found if c.chunk_id in wanted]
    missing = wanted - {c.chunk_id for c in found}
    if missing:
        q = table.query().where(in_list("id", sorted(missing))).select(columns).limit(len(missing))
        found += _shown(db, await q.to_arrow())
    return found


def _similarities(rows: pa.Table, query_vector: np.ndarray) -> list[float]:
    import numpy as np  # here, not at import: a server's start does not need it

    vectors = rows.column("vector").combine_chunks()
    matrix = vectors.flatten().to_numpy(zero_copy_only=False).reshape(len(vectors), -1)
    return (matrix.astype(np.float32, copy=False) @ query_vector.astype(np.float32)).tolist()
