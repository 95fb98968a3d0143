"""`haiku eval --answers`: each judged question asked through `ask`; does a citation land in an expected
document, and how often is the answer declared ungrounded?"""

from __future__ import annotations

from pathlib import Path

from pydantic_ai.models import Model

from haiku_cli.agents.ask import ask
from haiku_cli.databases.selection import Selection, searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.evaluation.documents import load_index, resolve_all
from haiku_cli.evaluation.judgments import in_file_order, read_judgments
from haiku_cli.evaluation.report import AnswerReport, AnswerResult
from haiku_cli.evaluation.retrieval_quality import Progress


async def evaluate_answers(
    ws: Workspace,
    selection: Selection,
    qrels: Path,
    *,
    model: str | Model | None = None,
    progress: Progress | None = None,
) -> AnswerReport:
    """Ask every judged question of `qrels` over the selection with `model` (else the configured one)."""
    judgments = read_judgments(qrels)
    searched, _ = searchable(selection)
    resolved, unknown = resolve_all(judgments, await load_index(ws, searched))
    questions = [q for q in judgments.questions if q.id in resolved]
    answers = []
    for done, question in enumerate(questions, 1):
        result = await ask(ws, selection, question.text, model=model)
        cited = {(c.database, c.document_id) for c in result.citations}
        answers.append(
            AnswerResult(
                id=question.id,
                query=question.text,
                grounded=result.grounded,
                cited_expected=bool(cited & resolved[question.id].grades.keys()),
                citations=len(result.citations),
            )
        )
        if progress is not None:
            progress(done, len(questions))
    n = len(answers) or 1
    return AnswerReport(
        databases=searched.names,
        questions=len(answers),
        bad_lines=in_file_order([*judgments.bad_lines, *unknown]),
        cited_expected=sum(a.cited_expected for a in answers) / n,
        ungrounded=sum(not a.grounded for a in answers) / n,
        answers=answers,
    )
