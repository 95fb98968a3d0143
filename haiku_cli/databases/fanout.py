"""Search over a set of databases: candidates from each, fused into one labelled ranking."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Literal

import numpy as np

from haiku_cli.config.settings import MAX_SEARCH_LIMIT
from haiku_cli.databases.concurrency import both
from haiku_cli.databases.freshness import UNCHECKED, RemoteCheck, SourceCheck, check_shown
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import Selection
from haiku_cli.errors import Hint, InputError
from haiku_cli.search import bm25
from haiku_cli.search.candidates import (
    Candidate,
    CandidateQuery,
    SearchType,
    candidates_of,
    show,
    vector_candidates,
)
from haiku_cli.search.fusion import DEFAULT_VECTOR_WEIGHT, as_one_pool, fuse, through_ties, tie_order
from haiku_cli.search.hits import SearchHit
from haiku_cli.search.lookups import Reads, Shape, each, takes_cheaply
from haiku_cli.store.database import Database, EmbedderSpec, parse_json_object
from haiku_cli.store.index_reads import analyzes_as_haiku
from haiku_cli.store.reads import documents_of
from haiku_cli.store.records import DocumentRecord

QueryEmbedder = Callable[[str], Awaitable[np.ndarray]]
# Longer queries only cost time: the embedder reads the first few hundred tokens, and full-text search
# of a 1 MB query across several databases took minutes.
MAX_QUERY_CHARS = 10_000
MAX_LIMIT = MAX_SEARCH_LIMIT  # the same bound as [search] limit in the config


def candidate_depth(limit: int, search_type: SearchType, parts: int = 1) -> int:
    """How many candidates of each kind to take from each of `parts` databases for a final list of `limit`.

    Vector search ranks by similarity alone, and full-text search of one database by its own BM25, so
    there each database's top `limit` holds every final hit. Full-text search in a fan-out rescores
    with the set's statistics, which moves a chunk only a few places, so each database's top 3 x `limit`
    nearly always holds it; where it might not, `bm25.rescore_set` reads that database deeper.
    Hybrid fusion takes a pool of 50 of each kind.
    """
    if search_type == "vector" or (search_type == "fts" and parts == 1):
        return limit
    if search_type == "fts":
        return 3 * limit
    return max(3 * limit, 50)


def reads_hits_apart(search_type: SearchType, depth: int, limit: int, parts: int) -> bool:
    """Whether a search reads what its hits show apart from its candidates: a first read of each
    database's ids and scores alone, then a second of the hits' rows in each database holding one.

    The second read costs about as much per database holding a hit whatever its rows; it pays where
    the first read would otherwise fetch what a hit shows for many more candidates than are shown:
    hybrid's pool of 50 of each kind, full text over 3 databases or more. Full text over 2 databases,
    30 candidates each, costs less in one read (benchmarks/fanout_floor.py measures each against the
    bare queries).
    """
    if depth <= limit:
        return False
    return search_type != "fts" or parts > 2


def check_embedders(dbs: list[Database], search_type: SearchType, configured: EmbedderSpec | None) -> None:
    """Vectors compare only within one embedder: refuse vector and hybrid search across embedders."""
    if search_type == "fts":
        return
    specs = {db.name: db.embedder for db in dbs}
    if len(set(specs.values())) > 1:
        detail = ", ".join(f"{name} ({spec.name})" for name, spec in specs.items())
        raise InputError(
            f"these databases were written with different embedders: {detail}",
            hint=Hint("fts_or_narrow", chosen_by=dbs[0].location.chosen_by),
        )
    if configured is not None:
        for db in dbs:
            db.check_embedder(configured)


async def search_set(
    pool: DatabasePool,
    selection: Selection,
    query: str,
    *,
    embed_query: QueryEmbedder | None,
    embedder_spec: Callable[[], Awaitable[EmbedderSpec]] | None = None,
    search_type: SearchType | Literal["auto"] = "hybrid",
    limit: int = 10,
    document_filter: str | None = None,
    vector_weight: float = DEFAULT_VECTOR_WEIGHT,
    check_sources: bool = True,
    check_remote: RemoteCheck | None = None,
) -> list[SearchHit]:
    """Search every database of the selection and return one ranking, each hit labelled (and, with
    `check_sources`, with whether its source changed since it was read)."""
    search = partial(
        _search_once,
        pool,
        selection,
        query,
        embed_query=embed_query,
        embedder_spec=embedder_spec,
        search_type=search_type,
        limit=limit,
        document_filter=document_filter,
        vector_weight=vector_weight,
        check_sources=check_sources,
        check_remote=check_remote,
    )
    return await pool.reading_latest(selection, search)


async def _search_once(
    pool: DatabasePool,
    selection: Selection,
    query: str,
    *,
    embed_query: QueryEmbedder | None,
    embedder_spec: Callable[[], Awaitable[EmbedderSpec]] | None,
    search_type: SearchType | Literal["auto"],
    limit: int,
    document_filter: str | None,
    vector_weight: float,
    check_sources: bool,
    check_remote: RemoteCheck | None,
) -> list[SearchHit]:
    if not query.strip():
        raise InputError("the search query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(
            f"the search query is {len(query):,} characters long; the most is {MAX_QUERY_CHARS:,}: "
            "search with its key words or a short passage"
        )
    if limit < 1:
        raise InputError("limit must be at least 1", argument="limit")
    if limit > MAX_LIMIT:
        raise InputError(
            f"limit must be at most {MAX_LIMIT:,}", argument="limit", hint=Hint("page_documents")
        )
    query_vector: np.ndarray | None = None
    if search_type in ("hybrid", "vector"):
        assert embed_query is not None
        # Opening cold databases and loading the embedder overlap: a first query waits for the slower.
        dbs, query_vector = await both(partial(pool.clients_covering, selection), partial(embed_query, query))
    else:
        dbs = await pool.clients_covering(selection)
    if search_type == "auto":
        # For agents, which cannot choose: hybrid, or full text alone across embedders.
        search_type = "hybrid" if len({db.embedder for db in dbs}) == 1 else "fts"
    if search_type != "fts":
        check_embedders(dbs, search_type, await embedder_spec() if embedder_spec else None)
        if query_vector is None:
            assert embed_query is not None
            query_vector = await embed_query(query)
    rescoring = search_type != "vector" and len(dbs) > 1
    depth = candidate_depth(limit, search_type, len(dbs))
    asked = CandidateQuery(
        query,
        query_vector,
        search_type,
        depth,
        document_filter,
        with_search_text=rescoring,
        parts=len(dbs),
        lean=reads_hits_apart(search_type, depth, limit, len(dbs)) and takes_cheaply(),
        # A split's ties at a database's k-th similarity matter only where they meet the set's cut:
        # `_vector_ties` reads those through; one database reads its own through every time.
        vector_ties=len(dbs) == 1,
    )
    # Every read of every database awaited here, at once: no worker thread, no other event loop.
    reads = Reads(pool)
    per_db = await _find(reads, dbs, asked, rescoring, limit)
    if search_type != "fts" and len(dbs) > 1:
        await _vector_ties(reads, dbs, asked, per_db, asked.k if search_type == "hybrid" else limit)
    pooled = [c for cands in per_db for c in cands]
    if search_type == "hybrid" and len(dbs) > 1:
        pooled = as_one_pool(pooled, asked.k)  # fused from the pool one database would have had
    ranked = through_ties(fuse(pooled, search_type=search_type, vector_weight=vector_weight), limit)
    if asked.lean:
        shown = {c.key: c for c in await show(reads, dbs, [c for c, _ in ranked])}
        ranked = [(shown[c.key], score) for c, score in ranked if c.key in shown]
        ranked.sort(key=lambda cs: (-cs[1], *tie_order(cs[0])))  # ties now ordered by what they hold
    ranked = ranked[:limit]
    documents = [(c.database, c.document_id) for c, _ in ranked]
    checks = await check_shown(dbs, documents, check_remote) if check_sources else {}
    return await _hydrate(dbs, ranked, checks)


async def _find(
    reads: Reads, dbs: list[Database], asked: CandidateQuery, rescoring: bool, limit: int
) -> list[list[Candidate]]:
    if not rescoring:
        return (await candidates_of(reads, dbs, asked))[1]
    if await reads.within(dbs[0], analyzes_as_haiku(dbs[0])):  # analysed in this thread, in microseconds
        terms = await bm25.query_terms(reads, dbs[0], asked.text)
        found, per_db = await candidates_of(reads, dbs, asked)
        return await _rescored(reads, dbs, asked, limit, terms, found, per_db)
    # The index's analyzer answers on LanceDB's loop: asked while the databases are searched. One task
    # beside this one, not a task group (whose two tasks cost CPU a search need not spend).
    analysing = asyncio.ensure_future(bm25.query_terms(reads, dbs[0], asked.text))
    try:
        found, per_db = await candidates_of(reads, dbs, asked)
    except BaseException:
        analysing.cancel()
        raise
    return await _rescored(reads, dbs, asked, limit, await analysing, found, per_db)


async def _rescored(
    reads: Reads,
    dbs: list[Database],
    asked: CandidateQuery,
    limit: int,
    terms: bm25.QueryTerms,
    found: list[Shape],
    per_db: list[list[Candidate]],
) -> list[list[Candidate]]:
    # Full text ranks the set's best `limit`; hybrid fuses the set's best k of each kind.
    needed = asked.k if asked.search_type == "hybrid" else limit
    await bm25.rescore_set(reads, dbs, found, per_db, asked, terms, needed)  # see haiku_cli.search.bm25
    return per_db


async def _vector_ties(
    reads: Reads, dbs: list[Database], asked: CandidateQuery, per_db: list[list[Candidate]], needed: int
) -> None:
    """Read through its ties each database whose last vector candidate scores as the set's `needed`-th:
    chunks it did not return may tie it, and which of them make the cut must not be its index's choice."""
    found = [[c.similarity for c in cands if c.by_vector and c.similarity is not None] for cands in per_db]
    ranked = sorted((s for sims in found for s in sims), reverse=True)
    if len(ranked) < needed:
        return
    cut = ranked[needed - 1]
    tied = [i for i, sims in enumerate(found) if len(sims) >= asked.k and min(sims) == cut]
    if not tied:
        return
    more = await each([(dbs[i], reads.within(dbs[i], vector_candidates(reads, dbs[i], asked))) for i in tied])
    for i, new in zip(tied, more, strict=True):
        held = {c.key: c for c in per_db[i]}
        for cand in new:
            old = held.get(cand.key)
            if old is None:
                per_db[i].append(cand)
            elif not old.by_vector:
                old.by_vector, old.similarity = True, cand.similarity


async def _hydrate(
    dbs: list[Database],
    ranked: list[tuple[Candidate, float]],
    checks: dict[tuple[str, str], SourceCheck],
) -> list[SearchHit]:
    """The ranked candidates as hits, with their documents' uri, title and metadata.

    Chunks carry those fields (schema version 2); only candidates of an old-layout database are looked up.
    """
    wanted: dict[str, set[str]] = defaultdict(set)
    for cand, _ in ranked:
        if cand.document is None:
            wanted[cand.database].add(cand.document_id)
    docs: dict[str, dict[str, DocumentRecord]] = {}
    holding = [db for db in dbs if db.name in wanted]
    if holding:
        fetched = await documents_of([(db, wanted[db.name]) for db in holding])
        docs = dict(zip([db.name for db in holding], fetched, strict=True))
    hits = []
    for rank, (cand, score) in enumerate(ranked, start=1):
        if cand.document is not None:
            uri, title, stored = cand.document
            metadata = parse_json_object(stored)
        else:
            doc = docs[cand.database].get(cand.document_id)
            uri, title, metadata = (doc.uri, doc.title, doc.metadata) if doc else (None, None, {})
        check = checks.get((cand.database, cand.document_id), UNCHECKED)
        # Built without validation: every field comes typed from the store or from the ranking above
        # (validating ten hits cost as much as ranking them).
        shown: dict[str, Any] = {
            "database": cand.database,
            "document_id": cand.document_id,
            "chunk_id": cand.chunk_id,
            "content": cand.text,
            "score": round(float(score), 6),
            "rank": rank,
            "heading_path": cand.heading_path,
            "pages": cand.pages,
            "document_uri": uri,
            "document_title": title,
            "metadata": metadata,
            "source_state": check.shown,
            "source_note": check.note,
            **cand.span,
        }
        hits.append(SearchHit.model_construct(**shown))
    return hits
