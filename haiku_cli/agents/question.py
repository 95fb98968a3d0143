"""One question, one run: the agent both `ask` and `analyze` build, and how its result is collected."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import anyio.to_thread
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import Model
from pydantic_ai.usage import RunUsage

from haiku_cli.agents.answer_results import AskResult
from haiku_cli.agents.models import (
    UnreadableResponses,
    model_errors,
    model_name,
    request_settings,
    resolve_model,
    whole_request,
)
from haiku_cli.capabilities.citations import number_markers
from haiku_cli.capabilities.evidence import set_scope
from haiku_cli.capabilities.policy import CitationPolicy, QuoteHandling, StreamedRedirect
from haiku_cli.capabilities.quotes import check_answer
from haiku_cli.capabilities.retrieval import RetrievalCapability
from haiku_cli.capabilities.scope import sources_of
from haiku_cli.capabilities.state import EvidenceState, HaikuDeps
from haiku_cli.config.settings import ModelSettings
from haiku_cli.databases.selection import Selection, searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError


def build_agent(
    capabilities: Sequence[AbstractCapability[HaikuDeps]],
    model: Model,
    instructions: str,
    *,
    settings: ModelSettings,
    streamed_redirect: StreamedRedirect = "before",
    quotes: QuoteHandling = "redirect",
) -> Agent[HaikuDeps, str]:
    """An agent answering one question per run with the given capabilities, under the citation policy.

    `settings` (the `[model]` section) bound each request in time; `streamed_redirect` and `quotes` are
    the policy's (see `CitationPolicy`).
    """
    return Agent(
        model,
        deps_type=HaikuDeps,
        output_type=str,
        instructions=instructions,
        capabilities=[
            *capabilities,
            CitationPolicy(streamed_redirect=streamed_redirect, quotes=quotes),
            UnreadableResponses(),
        ],
        model_settings=request_settings(settings),
        # The policy's one redirect spends an output retry; keep one more for an empty response.
        retries={"output": 2},
    )


async def answer_question(
    ws: Workspace,
    requested: Selection,
    question: str,
    evidence: RetrievalCapability,
    instructions: str,
    *,
    model: str | Model | None = None,
    document_filter: str | None = None,
) -> AskResult:
    """Run one question over `requested` (skipping local databases not written yet); collect the result."""
    if not question.strip():
        raise InputError("the question is empty")
    chosen = resolve_model(ws.settings.model, model)
    # Open the databases first: a missing one should fail before any tokens are spent.
    selection, not_created = await anyio.to_thread.run_sync(lambda: searchable(requested))
    await ws.pool.clients_covering(selection)
    label = chosen.model_name if isinstance(model, Model) else model_name(ws.settings.model, model)
    deps = HaikuDeps()
    sources = sources_of(ws, selection)
    evidence = replace(evidence, scope=tuple(sources), document_filter=document_filter)
    # The state names the question's scope too, so a Python caller resuming from it keeps it.
    set_scope(deps, [evidence], sources, document_filter)
    agent = build_agent([evidence], chosen, instructions, settings=ws.settings.model)
    with model_errors(label, chosen.base_url, ws.settings.model.timeout_seconds):
        result = await agent.run(question, deps=deps, model_settings=whole_request(ws.settings.model))
    answered = collect(result.output, [evidence.evidence(deps)], result.usage, deps)
    return answered.model_copy(update={"databases": selection.names, "not_created": not_created})


def collect(output: str, states: Sequence[EvidenceState], usage: RunUsage, deps: HaikuDeps) -> AskResult:
    """The answer of a finished run, judged across every evidence state it used (each cites by number)."""
    citations = sorted((c for s in states for c in s.citations), key=lambda c: c.index)
    answer = number_markers(output, citations)
    return AskResult(
        answer=answer,
        grounded=any(s.grounded for s in states),
        citations=citations,
        quotes=check_answer(answer, states),
        usage=usage_summary(usage),
        state=deps.dump(),
        violation=any(s.violation for s in states),
    )


def usage_summary(usage: RunUsage) -> dict[str, int]:
    """The token and request counts a user cares about."""
    return {
        "requests": usage.requests,
        "tool_calls": usage.tool_calls,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
    }
