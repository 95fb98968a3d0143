"""Scripting a model that analyses: execute_code steps, and an agent of analysis + citation policy."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse

from haiku_cli.capabilities import CitationPolicy, HaikuDeps, Source
from haiku_cli.capabilities.analysis import AnalysisCapability, AnalysisState
from haiku_cli.databases.workspace import Workspace
from tests.capabilities.script import Script, call, returns

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def execute(code: str) -> ModelResponse:
    """One response running one program."""
    return call(("execute_code", {"code": code}))


def last_output(messages: Sequence[ModelMessage]) -> str:
    """What the latest execute_code call returned to the model."""
    return returns(messages, "execute_code")[-1]


def cite_printed(count: int = 1):
    """A step citing the first `count` ids the latest program printed."""
    return lambda messages: call(("cite", {"chunk_ids": UUID.findall(last_output(messages))[:count]}))


def analysis_state(deps: HaikuDeps) -> AnalysisState:
    return deps.get("analysis", AnalysisState)


def run_analysis(
    ws: Workspace,
    script: Script,
    question: str = "How many documents are there?",
    *,
    deps: HaikuDeps | None = None,
    sources: Sequence[str] = (),
    **capability: Any,
) -> tuple[str, HaikuDeps]:
    """Run an agent of analysis + citation policy once; returns its output and deps."""
    analysis = AnalysisCapability(ws, **capability)
    deps = deps if deps is not None else HaikuDeps()
    if sources:
        analysis.evidence(deps).sources = [Source(name=n) for n in sources]
    agent = Agent(script.model, deps_type=HaikuDeps, capabilities=[analysis, CitationPolicy()])
    result = agent.run_sync(question, deps=deps)
    return result.output, deps
