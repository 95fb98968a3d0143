"""`haiku eval --compare KEY=A,B,...`: the same questions under two or more settings, each against the
first with paired tests over per-question nDCG@10."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from haiku_cli.evaluation.judgments import read_judgments
from haiku_cli.evaluation.report import SEARCH_TYPES, Comparison, Difference, RetrievalReport
from haiku_cli.evaluation.retrieval_quality import Progress, evaluate
from haiku_cli.evaluation.significance import permutation_test, sign_test
from haiku_cli.search.candidates import SearchType

LATEST = "now"  # `at=v1,now`: the tag against the databases as they are


@dataclass(frozen=True)
class Setting:
    """One value of the compared setting: the workspace and selection it is evaluated in."""

    label: str
    ws: Workspace
    selection: Selection


def _vector_weight(ws: Workspace, selection: Selection, value: str) -> Setting:
    try:
        search = ws.settings.search.model_validate(
            {**ws.settings.search.model_dump(), "vector_weight": value}
        )
    except ValidationError:
        raise InputError(f"vector_weight={value!r} is not a number from 0 to 1", argument="compare") from None
    settings = ws.settings.model_copy(update={"search": search})
    return Setting(f"vector_weight={search.vector_weight:g}", ws.derived(settings), selection)


def _database(ws: Workspace, selection: Selection, value: str) -> Setting:
    # `a+b`: a set of databases as one setting.
    return Setting(f"database={value}", ws, ws.select_many(value.split("+")))


def _at(ws: Workspace, selection: Selection, value: str) -> Setting:
    derived = ws.derived(ws.settings)
    derived.read_at(None if value == LATEST else value)
    return Setting(f"at={value}", derived, selection)


# A new comparable setting is one function here.
SETTINGS: dict[str, Callable[[Workspace, Selection, str], Setting]] = {
    "vector_weight": _vector_weight,
    "database": _database,
    "at": _at,
}


def parse_settings(ws: Workspace, selection: Selection, spec: str) -> list[Setting]:
    """`KEY=A,B,...` as the settings to run, the first being the baseline."""
    key, _, values = spec.partition("=")
    key = key.strip().replace("-", "_")
    if key not in SETTINGS:
        raise InputError(
            f"cannot compare {key!r}; compare one of {', '.join(SETTINGS)} (e.g. vector_weight=0.3,0.5,0.7)",
            argument="compare",
        )
    chosen = [v.strip() for v in values.split(",") if v.strip()]
    if len(chosen) < 2:
        raise InputError(f"--compare {spec!r} needs two or more values, e.g. {key}=A,B", argument="compare")
    return [SETTINGS[key](ws, selection, v) for v in chosen]


async def compare(
    ws: Workspace,
    selection: Selection,
    qrels: Path,
    spec: str,
    *,
    k: int = 10,
    search_types: Sequence[SearchType] = SEARCH_TYPES,
    progress: Progress | None = None,
) -> Comparison:
    """Evaluate `qrels` under each setting of `spec` and test each against the first."""
    settings = parse_settings(ws, selection, spec)
    judgments = read_judgments(qrels)
    runs: list[RetrievalReport] = []
    total = len(settings)
    for n, setting in enumerate(settings):

        def step(done: int, count: int, n: int = n) -> None:
            if progress is not None:
                progress(n * count + done, total * count)

        runs.append(
            await evaluate(
                setting.ws,
                setting.selection,
                judgments,
                k=k,
                search_types=search_types,
                progress=step,
                label=setting.label,
            )
        )
    differences = [
        difference(runs[0], run, level, kind)
        for run in runs[1:]
        for level in ("document", "chunk")
        for kind in search_types
    ]
    return Comparison(setting=spec, runs=runs, differences=differences)


def difference(baseline: RetrievalReport, variant: RetrievalReport, level: str, kind: str) -> Difference:
    """nDCG@10 of `variant` against `baseline` on the questions both evaluated, with paired tests."""
    before = {q.id: getattr(q, level)[kind].ndcg for q in baseline.queries}
    after = {q.id: getattr(q, level)[kind].ndcg for q in variant.queries}
    shared = [qid for qid in before if qid in after]
    # Float noise between equal rankings is no difference.
    deltas = [d if abs(d) > 1e-12 else 0.0 for d in (after[q] - before[q] for q in shared)]
    n = len(shared) or 1
    return Difference(
        baseline=baseline.label,
        variant=variant.label,
        level=level,
        search_type=kind,
        questions=len(shared),
        baseline_ndcg_10=sum(before[q] for q in shared) / n,
        variant_ndcg_10=sum(after[q] for q in shared) / n,
        delta=sum(deltas) / n,
        better=sum(d > 0 for d in deltas),
        worse=sum(d < 0 for d in deltas),
        same=sum(d == 0 for d in deltas),
        sign_p=sign_test(deltas),
        permutation_p=permutation_test(deltas),
    )
