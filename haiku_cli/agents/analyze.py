"""`haiku analyze`: an answer computed over the documents in a sandbox, with citations and programs run."""

from __future__ import annotations

from pydantic import Field
from pydantic_ai import Agent
from pydantic_ai.models import Model

from haiku_cli.agents.ask import AskResult, usage_summary
from haiku_cli.agents.models import REQUEST_SETTINGS, model_errors, model_name, resolve_model
from haiku_cli.capabilities.analysis import AnalysisCapability
from haiku_cli.capabilities.citations import number_markers
from haiku_cli.capabilities.policy import CitationPolicy
from haiku_cli.capabilities.scope import sources_of
from haiku_cli.capabilities.state import HaikuDeps
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from haiku_cli.sandbox.runner import Execution

INSTRUCTIONS = (
    "You answer the user's question about their own documents: counting, comparing, aggregating and "
    "tabulating across many of them. Compute the answer with programs rather than guessing from a few "
    "search results, check the output before relying on it, and fix a failing program rather than "
    "giving up. Be concise and write Markdown; show a table when the answer is one. Rely only on what "
    "the documents say."
)


class AnalyzeResult(AskResult):
    """Everything `ask` returns (answer, grounded, citations, usage, state), plus the programs run."""

    executions: list[Execution] = Field(default_factory=list)


def build_agent(analysis: AnalysisCapability, model: Model) -> Agent[HaikuDeps, str]:
    """The analyze agent: the analysis capability plus the citation policy, one question per run."""
    return Agent(
        model,
        deps_type=HaikuDeps,
        output_type=str,
        instructions=INSTRUCTIONS,
        capabilities=[analysis, CitationPolicy()],
        model_settings=REQUEST_SETTINGS,
        # The policy's one redirect spends an output retry; keep one more for an empty response.
        retries={"output": 2},
    )


async def analyze(
    ws: Workspace,
    selection: Selection,
    question: str,
    *,
    model: str | Model | None = None,
    document_filter: str | None = None,
) -> AnalyzeResult:
    """Answer `question` by running model-written programs over the selected databases' documents."""
    if not question.strip():
        raise InputError("the question is empty")
    chosen = resolve_model(ws.settings.model, model)
    label = chosen.model_name if isinstance(model, Model) else model_name(ws.settings.model, model)
    analysis = AnalysisCapability(ws, budget=ws.settings.model.search_budget)
    deps = HaikuDeps()
    scope = analysis.evidence(deps)
    scope.sources = sources_of(ws, selection)
    scope.document_filter = document_filter
    agent = build_agent(analysis, chosen)
    with model_errors(label, chosen.base_url):
        result = await agent.run(question, deps=deps)
    state = analysis.evidence(deps)
    citations = sorted(state.citations, key=lambda c: c.index)
    return AnalyzeResult(
        answer=number_markers(result.output, citations),
        grounded=state.grounded,
        citations=citations,
        executions=[record.execution() for record in state.current_executions()],
        usage=usage_summary(result.usage),
        state=deps.dump(),
        violation=state.violation,
    )
