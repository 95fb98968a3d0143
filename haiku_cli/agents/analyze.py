"""`haiku analyze`: an answer computed over the documents in a sandbox, with citations and programs run."""

from __future__ import annotations

from pydantic_ai.models import Model

from haiku_cli.agents.answer_results import AnalyzeResult
from haiku_cli.agents.question import answer_question
from haiku_cli.capabilities.analysis import AnalysisCapability
from haiku_cli.capabilities.state import HaikuDeps
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace

INSTRUCTIONS = (
    "You answer the user's question about their own documents: counting, comparing, aggregating and "
    "tabulating across many of them. Compute the answer with programs rather than guessing from a few "
    "search results, check the output before relying on it, and fix a failing program rather than "
    "giving up. Be concise and write Markdown; show a table when the answer is one. Rely only on what "
    "the documents say."
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
    analysis = AnalysisCapability(ws, budget=ws.settings.model.search_budget)
    answered = await answer_question(
        ws, selection, question, analysis, INSTRUCTIONS, model=model, document_filter=document_filter
    )
    state = analysis.evidence(HaikuDeps.restore(answered.state))
    executions = [record.execution() for record in state.current_executions()]
    return AnalyzeResult(**dict(answered), executions=executions)
