"""What `ask` and `analyze` return: plain data, importable without pydantic-ai (servers name these types
in their tools before any question is asked)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.quotes import QuoteCheck
from haiku_cli.sandbox.execution import Execution


class AskResult(BaseModel):
    """The answer, whether it is grounded, its citations, token usage and the capabilities' final state."""

    answer: str
    grounded: bool
    databases: list[str] = Field(default_factory=list)  # the databases the question covered
    not_created: list[str] = Field(default_factory=list)  # local databases skipped: nothing added yet
    citations: list[Citation] = Field(default_factory=list)
    # Passages the answer quotes (or passed to `cite`), each checked against the cited chunks.
    quotes: list[QuoteCheck] = Field(default_factory=list)
    usage: dict[str, int] = Field(default_factory=dict)
    # For resuming in Python (`HaikuDeps.restore`); left out of `model_dump`, so of the JSON.
    state: dict[str, Any] = Field(default_factory=dict, exclude=True)
    violation: bool = False  # the model ended with evidence but neither cited nor declared


class AnalyzeResult(AskResult):
    """Everything `ask` returns (answer, grounded, citations, usage, state), plus the programs run."""

    executions: list[Execution] = Field(default_factory=list)
