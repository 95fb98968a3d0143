"""`haiku eval`: retrieval (and answer) quality over the selected databases, from judged questions."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from haiku_cli.cli import output
from haiku_cli.cli.eval_render import answers_text, comparison_text, retrieval_text
from haiku_cli.cli.options import DATABASE_SET, At, Json, ModelName, workspace
from haiku_cli.cli.running import add_command, exit_with, run, usage_error
from haiku_cli.errors import ExitCode, InputError

if TYPE_CHECKING:
    from haiku_cli.api import GeneratedQuestions, RetrievalReport, SearchType, Selection

_TYPES = ("fts", "vector", "hybrid")


def register(app: typer.Typer) -> None:
    """Add the eval command to the app."""
    add_command(app, "eval", eval_)


Qrels = Annotated[
    Path,
    typer.Argument(
        help="A BEIR folder (queries.jsonl, qrels.tsv) or a questions file; with --generate, the file "
        "to write.",
        metavar="QRELS",
    ),
]
K = Annotated[
    int,
    typer.Option("--k", "-k", help="The k of recall@k and hits@k (1 to 1000).", min=1, max=1000, metavar="K"),
]
TypeName = Annotated[str, typer.Option("--type", "-t", help="fts, vector, hybrid or all.", metavar="TYPE")]
MinNdcg = Annotated[
    float | None,
    typer.Option(
        "--min-ndcg",
        help="Exit 1 when document-level nDCG@10 (hybrid, or --type) is below this.",
        metavar="SCORE",
    ),
]
Compare = Annotated[
    str | None,
    typer.Option(
        "--compare",
        help="Run under each value of a setting, tested against the first: vector_weight=0.3,0.5, "
        "database=a,b (a+b: a set) or at=TAG,now.",
        metavar="KEY=A,B",
    ),
]
Generate = Annotated[
    int | None,
    typer.Option("--generate", help="Write N draft questions to QRELS with the model.", metavar="N", min=1),
]
Answers = Annotated[
    bool, typer.Option("--answers", help="Ask each question with the model; score its citations.")
]


def eval_(
    ctx: typer.Context,
    qrels: Qrels,
    k: K = 10,
    search_type: TypeName = "all",
    min_ndcg: MinNdcg = None,
    compare: Compare = None,
    generate: Generate = None,
    answers: Answers = False,
    model: ModelName = None,
    selection: Selection = DATABASE_SET,
    json: Json = False,
    at: At = None,
) -> None:
    """Measure search quality on judged questions over the selected databases (haiku help eval).

    nDCG@10, MRR@10, recall@k and hits@k for fts, vector and hybrid, by document and by chunk. Exit 0
    whatever the scores, unless --min-ndcg is given and not met (exit 1). --compare at=TAG,now compares
    a tag against now; --answers asks each question with the model.

    Examples:

    \b
      haiku eval ~/cisi                           a BEIR folder
      haiku eval questions.jsonl -d notes --k 5   {"query", "expected", "lines"} a line
      haiku eval ~/cisi --compare vector_weight=0.3,0.5,0.7
    """
    from haiku_cli import api

    modes = [
        c for c, given in (("--compare", compare), ("--generate", generate), ("--answers", answers)) if given
    ]
    if len(modes) > 1:
        raise usage_error(f"give one of {', '.join(modes)}", ctx)
    kinds = _search_types(search_type)
    ws = workspace(ctx)
    ws.read_at(at)
    if generate is not None:
        with output.count_bar("writing questions") as bar:
            made = run(
                lambda: api.generate_questions(ws, selection, qrels, generate, model=model, progress=bar)
            )
        _generated(made, json)
    elif answers:
        with output.count_bar("asking") as bar:
            judged = run(lambda: api.evaluate_answers(ws, selection, qrels, model=model, progress=bar))
        _bad_lines(judged.bad_lines, judged.questions)
        output.print_model(judged) if json else answers_text(judged)
    elif compare is not None:
        with output.count_bar("evaluating") as bar:
            compared = run(
                lambda: api.compare_settings(
                    ws, selection, qrels, compare, k=k, search_types=kinds, progress=bar
                )
            )
        _bad_lines(compared.runs[0].bad_lines, compared.runs[0].questions)
        output.print_model(compared) if json else comparison_text(compared)
    else:
        with output.count_bar("evaluating") as bar:
            report = run(lambda: api.evaluate(ws, selection, qrels, k=k, search_types=kinds, progress=bar))
        _bad_lines(report.bad_lines, report.questions)
        output.print_model(report) if json else retrieval_text(report)
        _check_threshold(report, min_ndcg, kinds)


def _generated(made: GeneratedQuestions, json: bool) -> None:
    if json:
        output.print_model(made)
        return
    output.out.print(
        f"wrote {made.questions} draft questions to {made.path}: review them before trusting scores on them "
        "(haiku help eval)",
        markup=False,
        soft_wrap=True,
    )


def _bad_lines(lines: list[str], evaluated: int) -> None:
    """Each line left out, then their count; nothing left to evaluate is an error, not a score of 0."""
    for line in lines:
        output.note(f"left out {line}")
    if lines:
        output.note(f"{len(lines)} line(s) left out; {evaluated} question(s) evaluated")
    if evaluated == 0:
        raise InputError("no question could be evaluated: every one was left out")


def _search_types(value: str) -> list[SearchType]:
    value = value.lower()
    if value == "all":
        return list(_TYPES)  # type: ignore[arg-type]
    if value not in _TYPES:
        raise InputError(f"unknown --type {value!r}; use fts, vector, hybrid or all")
    return [value]  # type: ignore[list-item]


def _check_threshold(report: RetrievalReport, min_ndcg: float | None, kinds: list[SearchType]) -> None:
    if min_ndcg is None:
        return
    kind = "hybrid" if "hybrid" in kinds else kinds[0]
    got = report.document[kind].ndcg_10
    if got < min_ndcg:
        output.error(f"{kind} nDCG@10 (documents) is {got:.4f}, below --min-ndcg {min_ndcg:g}")
        exit_with(ExitCode.INPUT)
