"""Real MCP hosts: a pydantic-ai agent on the server through pydantic-ai's MCP client; `ask` over MCP."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.cli.openai_stub import Reply, answer, serve, tool_call
from tests.mcp_server.conftest import START_TIMEOUT, haiku_command, server_env

pytestmark = pytest.mark.slow


def test_pydantic_ai_agent_searches_through_the_server(http_url: str) -> None:
    seen: list[Any] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if not returned:
            assert {"search", "list_documents"} <= {t.name for t in info.function_tools}
            return ModelResponse(parts=[ToolCallPart("search", {"query": "tides", "type": "fts"})])
        hits = returned[0].content["hits"]
        seen.extend(hits)
        cited = "; ".join(f"{h['document_title']} [{h['database']}]" for h in hits)
        return ModelResponse(parts=[TextPart(f"Sources: {cited}")])

    agent = Agent(FunctionModel(model), toolsets=[MCPToolset(http_url)])

    async def go() -> str:
        with anyio.fail_after(START_TIMEOUT):
            async with agent:
                return (await agent.run("What raises the tides?")).output

    output = anyio.run(go)
    assert {h["database"] for h in seen} == {"alpha", "beta"}
    assert output.startswith("Sources: ")
    assert sorted(output.removeprefix("Sources: ").split("; ")) == ["Tide pools [beta]", "Tides [alpha]"]


_SHOWN_ID = re.compile(r"^\[([0-9a-f-]{36})\]", re.MULTILINE)


def scripted(body: dict[str, Any]) -> Reply:
    """Search, cite the first chunk shown, answer; a question about keys is refused as a bad key would be."""
    question = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "key" in question:
        return 401, {"error": {"message": "Incorrect API key", "code": "invalid_api_key"}}
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return tool_call("search", {"query": "tide pools"})
    if len(results) == 1:
        return tool_call("cite", {"chunk_ids": _SHOWN_ID.findall(results[0])[:1]}, "call_2")
    return answer("Rocky hollows left by the tide [1].")


def test_ask_through_mcp_against_an_openai_compatible_server(corpus: Path) -> None:
    command, *args = haiku_command()
    with serve(scripted) as stub:
        env = server_env(
            corpus, HAIKU_MODEL="openai-chat:test", OPENAI_BASE_URL=stub.base_url, OPENAI_API_KEY="dummy"
        )
        params = StdioServerParameters(
            command=command, args=[*args, "mcp", "-d", "alpha", "-d", "beta"], env=env
        )

        async def go() -> tuple[set[str], Any, Any, Any]:
            with anyio.fail_after(START_TIMEOUT):
                async with Client(params) as client:
                    tools = {t.name for t in (await client.list_tools()).tools}
                    asked = await client.call_tool(
                        "ask", {"question": "What are tide pools?", "databases": ["beta"]}
                    )
                    refused = await client.call_tool("ask", {"question": "Which key opens it?"})
                    stray = await client.call_tool("ask", {"question": "Tides?", "databases": ["gamma"]})
                    return tools, asked, refused, stray

        tools, asked, refused, stray = anyio.run(go)
    assert {"ask", "analyze"} <= tools
    result = asked.structured_content
    assert not asked.is_error and result["grounded"] is True
    assert result["answer"] == "Rocky hollows left by the tide [1]."
    assert [(c["index"], c["database"], c["document_title"]) for c in result["citations"]] == [
        (1, "beta", "Tide pools")
    ]
    assert "state" not in result  # single-shot: nothing carried for a later turn
    assert refused.is_error and refused.content[0].text == (
        "the model server rejected the credentials for 'openai-chat:test' (HTTP 401); "
        "check the API key variable"
    )
    assert (
        stray.is_error
        and stray.content[0].text == "unknown database 'gamma'; databases in scope: alpha, beta"
    )
    assert "'gamma'" not in json.dumps(stub.requests)  # the out-of-scope question never reached the model
