"""The MCP tools that reach the configured model, registered only when one is: `ask` and `analyze`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from haiku_cli.api import AnalyzeResult, AskResult
from haiku_cli.mcp_server.tools import Databases, ServerScope

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

# The SDK evaluates the tools' annotations in this module's globals: every name they use is imported here.
__all__ = ["AnalyzeResult", "AskResult", "Databases", "register_answering_tools"]


def register_answering_tools(server: MCPServer, scope: ServerScope) -> None:
    """`ask` and `analyze`, which reach the configured model (hence open-world) but still only read."""
    from mcp_types import ToolAnnotations

    answering = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True)

    @server.tool(annotations=answering)
    async def ask(
        question: Annotated[str, Field(description="The question to answer from the documents.")],
        databases: Databases = None,
    ) -> AskResult:
        """Answer a question from the documents: the answer, whether it is grounded, and citations."""
        return await scope.answer("ask", question, databases)

    @server.tool(annotations=answering)
    async def analyze(
        question: Annotated[
            str, Field(description="A question needing counting, comparing or aggregating documents.")
        ],
        databases: Databases = None,
    ) -> AnalyzeResult:
        """Answer by running model-written programs over the documents; with citations and programs."""
        return await scope.answer("analyze", question, databases)  # type: ignore[return-value]
