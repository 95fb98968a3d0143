"""Scripting the model for capability tests: a FunctionModel that plays one step per request."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

from haiku_cli.capabilities import CitationPolicy, HaikuDeps, RetrievalCapability, Source
from haiku_cli.databases.workspace import Workspace

Step = ModelResponse | Callable[[list[ModelMessage]], ModelResponse]

_CHUNK_ID = re.compile(r"^\[([0-9a-f-]{36})\]", re.MULTILINE)


def call(*calls: tuple[str, dict[str, Any]]) -> ModelResponse:
    """One response holding the given tool calls, e.g. call(("search", {"query": "x"}))."""
    return ModelResponse(parts=[ToolCallPart(name, args) for name, args in calls])


def search(*queries: str) -> ModelResponse:
    """One response that searches once per query."""
    return call(*(("search", {"query": q}) for q in queries))


def text(answer: str) -> ModelResponse:
    """A final answer."""
    return ModelResponse(parts=[TextPart(answer)])


def returns(messages: Sequence[ModelMessage], tool: str | None = None) -> list[str]:
    """The contents of every tool return so far (optionally of one tool), oldest first."""
    return [
        part.model_response_str()
        for m in messages
        if isinstance(m, ModelRequest)
        for part in m.parts
        if isinstance(part, ToolReturnPart) and (tool is None or part.tool_name == tool)
    ]


def chunk_ids(messages: Sequence[ModelMessage]) -> list[str]:
    """Chunk ids the model was shown in search results, in order."""
    return [i for r in returns(messages, "search") for i in _CHUNK_ID.findall(r)]


def cite_first(count: int = 1) -> Step:
    """A step that cites the first `count` chunk ids from the search results."""
    return lambda messages: call(("cite", {"chunk_ids": chunk_ids(messages)[:count]}))


class Script:
    """A FunctionModel that answers request n with step n, and keeps every request for assertions."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.seen: list[list[ModelMessage]] = []
        self.infos: list[AgentInfo] = []
        self.model = FunctionModel(self._respond)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.infos.append(info)
        if len(self.seen) > len(self.steps):
            raise AssertionError(f"request {len(self.seen)} but the script has {len(self.steps)} steps")
        step = self.steps[len(self.seen) - 1]
        return step if isinstance(step, ModelResponse) else step(messages)

    @property
    def last(self) -> list[ModelMessage]:
        """The messages of the latest request."""
        return self.seen[-1]


def agent_tools(script: Script, request: int = 0) -> list[ToolDefinition]:
    """The function tools the model was offered in one request."""
    return list(script.infos[request].function_tools)


def run(
    ws: Workspace,
    script: Script,
    question: str = "What do the documents say?",
    *,
    deps: HaikuDeps | None = None,
    sources: Sequence[str] = (),
    budget: int = 5,
    extra: Sequence[AbstractCapability[HaikuDeps]] = (),
) -> tuple[str, HaikuDeps]:
    """Run an agent of retrieval + citation policy (+ `extra`) once; returns its output and deps."""
    retrieval = RetrievalCapability(ws, budget=budget)
    deps = deps if deps is not None else HaikuDeps()
    if sources:
        retrieval.evidence(deps).sources = [Source(name=n) for n in sources]
    agent = Agent(script.model, deps_type=HaikuDeps, capabilities=[retrieval, CitationPolicy(), *extra])
    result = agent.run_sync(question, deps=deps)
    return result.output, deps
