"""`haiku ask`: a grounded answer with citations, from the retrieval and citation-policy capabilities."""

from __future__ import annotations

from pydantic_ai.models import Model

from haiku_cli.agents.answer_results import AskResult
from haiku_cli.agents.question import answer_question
from haiku_cli.capabilities.retrieval import RetrievalCapability
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace

INSTRUCTIONS = (
    "You answer the user's question from their own documents. Be concise and write Markdown. "
    "Rely only on what the documents say; never present outside knowledge as theirs."
)


async def ask(
    ws: Workspace,
    selection: Selection,
    question: str,
    *,
    model: str | Model | None = None,
    document_filter: str | None = None,
) -> AskResult:
    """Answer `question` from the selected databases, citing chunks labelled with their database."""
    retrieval = RetrievalCapability(ws, budget=ws.settings.model.search_budget)
    return await answer_question(
        ws, selection, question, retrieval, INSTRUCTIONS, model=model, document_filter=document_filter
    )
