"""How `haiku eval` prints its reports as text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from haiku_cli.cli import output
from haiku_cli.cli.tables import table

if TYPE_CHECKING:
    from haiku_cli.api import AnswerReport, Comparison, RetrievalReport

_SHOWN_MISSES = 20


def _line(text: str, style: str | None = None) -> None:
    output.out.print(text, markup=False, soft_wrap=True, style=style)


def retrieval_text(report: RetrievalReport) -> None:
    """The scores table, then the questions each search type missed at the document level."""
    left = f"; {report.unjudged} unjudged queries left out" if report.unjudged else ""
    _line(f"{report.questions} questions over {', '.join(report.databases)}{left}", "bold")
    k = report.k
    rows = [
        [
            level,
            kind,
            f"{s.ndcg_10:.4f}",
            f"{s.mrr_10:.4f}",
            f"{s.recall:.4f}",
            f"{s.hits:.4f}",
            len(s.missed),
        ]
        for level, by_type in (("document", report.document), ("chunk", report.chunk))
        for kind, s in by_type.items()
    ]
    table(["level", "type", "nDCG@10", "MRR@10", f"recall@{k}", f"hits@{k}", "missed"], rows)
    for kind, summary in report.document.items():
        if summary.missed:
            shown = ", ".join(summary.missed[:_SHOWN_MISSES])
            more = (
                f" and {len(summary.missed) - _SHOWN_MISSES} more"
                if len(summary.missed) > _SHOWN_MISSES
                else ""
            )
            _line(f"{kind} missed (no expected document in the top {k}): {shown}{more}")


def comparison_text(comparison: Comparison) -> None:
    """Each setting's document-level scores, then each against the first with its paired tests."""
    _line(f"{comparison.runs[0].questions} questions, {comparison.setting}", "bold")
    rows = [
        [run.label, kind, f"{s.ndcg_10:.4f}", f"{s.mrr_10:.4f}", f"{s.recall:.4f}", f"{s.hits:.4f}"]
        for run in comparison.runs
        for kind, s in run.document.items()
    ]
    k = comparison.runs[0].k
    table(["setting (documents)", "type", "nDCG@10", "MRR@10", f"recall@{k}", f"hits@{k}"], rows)
    _line("")
    diffs = [
        [
            f"{d.variant} vs {d.baseline}",
            d.level,
            d.search_type,
            f"{d.delta:+.4f}",
            f"{d.better}/{d.worse}/{d.same}",
            f"{d.sign_p:.3f}",
            f"{d.permutation_p:.3f}",
        ]
        for d in comparison.differences
    ]
    table(["nDCG@10", "level", "type", "change", "better/worse/same", "sign p", "permutation p"], diffs)
    _line("p < 0.05: unlikely to be noise; p above it: the questions cannot tell the settings apart.")


def answers_text(report: AnswerReport) -> None:
    """How often an answer cited an expected document, and how often it was declared ungrounded."""
    n = report.questions
    cited = sum(a.cited_expected for a in report.answers)
    ungrounded = sum(not a.grounded for a in report.answers)
    _line(f"{n} questions asked over {', '.join(report.databases)}", "bold")
    _line(f"cited an expected document: {cited} of {n} ({report.cited_expected:.0%})")
    _line(f"declared ungrounded:        {ungrounded} of {n} ({report.ungrounded:.0%})")
    missed = [a.id for a in report.answers if not a.cited_expected]
    if missed:
        _line(f"no expected document cited: {', '.join(missed[:_SHOWN_MISSES])}")
