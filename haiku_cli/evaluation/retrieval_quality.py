"""Retrieval quality over a selection: each judged question searched by every search type, scored at the
document and chunk level."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from haiku_cli.databases import queries
from haiku_cli.databases.selection import Selection, searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from haiku_cli.evaluation.documents import ChunkJudge, Relevance, load_index, resolve_all
from haiku_cli.evaluation.judgments import Judgments, Question, in_file_order, read_judgments
from haiku_cli.evaluation.measures import NDCG_DEPTH, QueryScores, score
from haiku_cli.evaluation.report import SEARCH_TYPES, QueryResult, RetrievalReport, TypeSummary
from haiku_cli.search.candidates import SearchType

Progress = Callable[[int, int], None]  # (questions done, questions in all)
MAX_K = 1000


async def evaluate(
    ws: Workspace,
    selection: Selection,
    qrels: Path | Judgments,
    *,
    k: int = 10,
    search_types: Sequence[SearchType] = SEARCH_TYPES,
    progress: Progress | None = None,
    label: str = "",
) -> RetrievalReport:
    """`haiku eval`: every judged question of `qrels` searched over the selection by each search type.

    Documents rank by their best chunk (`search --files`); chunks as `search` ranks them. Lines naming no
    stored document, and empty questions, are left out and listed in `bad_lines`.
    """
    if not 1 <= k <= MAX_K:
        raise InputError(f"k must be between 1 and {MAX_K}, got {k}", argument="k")
    judgments = qrels if isinstance(qrels, Judgments) else read_judgments(qrels)
    searched, not_created = searchable(selection)
    resolved, unknown = resolve_all(judgments, await load_index(ws, searched))
    questions = [q for q in judgments.questions if q.id in resolved]
    judge = ChunkJudge(ws, searched)
    await judge.preload(key for q in questions for key in resolved[q.id].grades)
    results = []
    for done, question in enumerate(questions, 1):
        results.append(await _one(ws, searched, question, resolved[question.id], judge, k, search_types))
        if progress is not None:
            progress(done, len(questions))
    return RetrievalReport(
        databases=searched.names,
        not_created=not_created,
        label=label,
        k=k,
        questions=len(results),
        unjudged=judgments.unjudged,
        bad_lines=in_file_order([*judgments.bad_lines, *unknown]),
        document={t: summarize(results, "document", t) for t in search_types},
        chunk={t: summarize(results, "chunk", t) for t in search_types},
        queries=results,
    )


async def _one(
    ws: Workspace,
    selection: Selection,
    question: Question,
    relevance: Relevance,
    judge: ChunkJudge,
    k: int,
    search_types: Sequence[SearchType],
) -> QueryResult:
    depth = max(k, NDCG_DEPTH)
    chunk_grades = await judge.grades(relevance)
    result = QueryResult(id=question.id, query=question.text, relevant_documents=len(relevance.grades))
    for kind in search_types:
        docs = await queries.search(
            ws, selection, question.text, search_type=kind, limit=depth, per_document=True
        )
        chunks = await queries.search(ws, selection, question.text, search_type=kind, limit=depth)
        doc_ranking = [(h.database, h.document_id) for h in docs.hits]
        result.document[kind] = score(doc_ranking, relevance.grades, k)
        result.chunk[kind] = score([(h.database, h.chunk_id) for h in chunks.hits], chunk_grades, k)
    return result


def summarize(results: Sequence[QueryResult], level: str, kind: str) -> TypeSummary:
    """Means over the questions of one level and search type, with the questions it missed."""
    scores: list[tuple[str, QueryScores]] = [(r.id, getattr(r, level)[kind]) for r in results]
    n = len(scores) or 1
    return TypeSummary(
        ndcg_10=sum(s.ndcg for _, s in scores) / n,
        mrr_10=sum(s.rr for _, s in scores) / n,
        recall=sum(s.recall for _, s in scores) / n,
        hits=sum(s.hit for _, s in scores) / n,
        missed=[qid for qid, s in scores if not s.hit],
    )
