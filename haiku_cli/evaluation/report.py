"""What `haiku eval` reports: pydantic models whose `model_dump(mode="json")` is the command's `--json`."""

from __future__ import annotations

from pydantic import BaseModel, Field

from haiku_cli.evaluation.measures import QueryScores
from haiku_cli.search.candidates import SearchType

SEARCH_TYPES: tuple[SearchType, ...] = ("fts", "vector", "hybrid")


class TypeSummary(BaseModel):
    """One search type's means over the evaluated questions, and the questions it missed (no relevant
    item in the top k)."""

    ndcg_10: float
    mrr_10: float
    recall: float  # recall@k
    hits: float  # hits@k: the share of questions with a relevant item in the top k
    missed: list[str] = Field(default_factory=list)


class QueryResult(BaseModel):
    """One question's scores, by level and search type."""

    id: str
    query: str
    relevant_documents: int
    document: dict[str, QueryScores] = Field(default_factory=dict)
    chunk: dict[str, QueryScores] = Field(default_factory=dict)


class RetrievalReport(BaseModel):
    """`haiku eval`: nDCG@10, MRR@10, recall@k and hits@k per search type, for documents and chunks."""

    databases: list[str]
    not_created: list[str] = Field(default_factory=list)
    label: str = ""  # the setting evaluated, under --compare
    k: int
    questions: int  # questions evaluated
    unjudged: int = 0  # queries listed without a relevant judgment (left out)
    bad_lines: list[str] = Field(default_factory=list)  # lines left out, one line each, place first
    document: dict[str, TypeSummary] = Field(default_factory=dict)
    chunk: dict[str, TypeSummary] = Field(default_factory=dict)
    queries: list[QueryResult] = Field(default_factory=list)


class Difference(BaseModel):
    """A setting against the baseline (the first) on the questions both evaluated: nDCG@10 per question."""

    baseline: str
    variant: str
    level: str
    search_type: str
    questions: int
    baseline_ndcg_10: float
    variant_ndcg_10: float
    delta: float
    better: int  # questions the variant scored higher
    worse: int
    same: int
    sign_p: float  # two-sided exact sign test
    permutation_p: float  # two-sided paired permutation test (seeded)


class Comparison(BaseModel):
    """`haiku eval --compare`: each setting's report and its differences from the first."""

    setting: str
    runs: list[RetrievalReport]
    differences: list[Difference]


class AnswerResult(BaseModel):
    """One question asked through `ask`."""

    id: str
    query: str
    grounded: bool
    cited_expected: bool  # a citation lands in an expected document
    citations: int


class AnswerReport(BaseModel):
    """`haiku eval --answers`: how often an answer cites an expected document, and how often it is
    declared ungrounded."""

    databases: list[str]
    questions: int
    bad_lines: list[str] = Field(default_factory=list)
    cited_expected: float  # share of questions
    ungrounded: float  # share of questions
    answers: list[AnswerResult] = Field(default_factory=list)
