"""The installed `haiku mcp` in a subprocess, reached by the SDK's own client over stdio and HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from tests.mcp_server.conftest import START_TIMEOUT, haiku_command, server_env, serving_http

pytestmark = pytest.mark.slow

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


async def exercise(client: Client) -> dict[str, Any]:
    """The calls a client makes in a first session: list tools, search, narrow, stray, list and get."""
    tools = {t.name for t in (await client.list_tools()).tools}
    both = await client.call_tool("search", {"query": "tides", "type": "fts"})
    narrowed = await client.call_tool("search", {"query": "tides", "databases": ["alpha"]})
    stray = await client.call_tool("search", {"query": "tides", "databases": ["gamma"]})
    listed = await client.call_tool("list_documents", {"database": "beta"})
    first = listed.structured_content["documents"][0]
    got = await client.call_tool("get_document", {"database": "beta", "document_id": first["id"]})
    empty = await client.call_tool("search", {"query": ""})
    return {
        "tools": tools,
        "both": {h["database"] for h in both.structured_content["hits"]},
        "narrowed": {h["database"] for h in narrowed.structured_content["hits"]},
        "stray": (stray.is_error, stray.content[0].text),
        "got": got.structured_content["document"]["title"],
        "empty": (empty.is_error, empty.content[0].text),
    }


def assert_first_session(seen: dict[str, Any]) -> None:
    assert seen["tools"] == {"list_databases", "search", "get_document", "get_pictures", "list_documents"}
    assert seen["both"] == {"alpha", "beta"}
    assert seen["narrowed"] == {"alpha"}
    assert seen["stray"] == (True, "unknown database 'gamma'; databases in scope: alpha, beta")
    assert seen["got"] == "Tide pools"
    assert seen["empty"] == (True, "the query is empty; give some words to search for")


def test_stdio(corpus: Path) -> None:
    command, *args = haiku_command()
    params = StdioServerParameters(
        command=command, args=[*args, "mcp", "-d", "alpha", "-d", "beta"], env=server_env(corpus)
    )

    async def go() -> dict[str, Any]:
        with anyio.fail_after(START_TIMEOUT):
            async with Client(params) as client:
                return await exercise(client)

    assert_first_session(anyio.run(go))


def test_streamable_http(http_url: str) -> None:
    async def go() -> dict[str, Any]:
        with anyio.fail_after(START_TIMEOUT):
            async with Client(http_url) as client:
                return await exercise(client)

    assert_first_session(anyio.run(go))


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 200),
        ({"Origin": "http://localhost:6274"}, 200),  # a local page, e.g. an inspector on another port
        ({"Origin": "http://evil.example"}, 403),
        ({"Host": "evil.example:8765"}, 421),  # DNS rebinding: a foreign name resolving to 127.0.0.1
    ],
)
def test_http_refuses_foreign_origin_and_host(http_url: str, headers: dict[str, str], status: int) -> None:
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers}
    with httpx.stream("POST", http_url, json=INITIALIZE, headers=sent, timeout=30) as response:
        assert response.status_code == status


def test_a_refused_origin_is_one_plain_line_on_the_servers_stderr(http_url: str, corpus: Path) -> None:
    sent = {"Content-Type": "application/json", "Origin": "http://refused.example"}
    with httpx.stream("POST", http_url, json=INITIALIZE, headers=sent, timeout=30) as response:
        assert response.status_code == 403
    # Logged before the response was sent: the line is there once the 403 came back.
    log = (corpus / "http-server.log").read_text().splitlines()
    said = [line for line in log if "refused.example" in line]
    assert said == [
        "haiku: refused a request: invalid Origin header: http://refused.example (another host name: "
        "--allow-host)"
    ]


def test_listening_on_every_address_prints_a_url_its_host_check_accepts(corpus: Path) -> None:
    # 0.0.0.0 is where to listen, not a name to connect to: its Host header would be refused (421).
    with serving_http(corpus, host="0.0.0.0", HAIKU_MCP_TOKEN=TOKEN) as url:
        sent = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {TOKEN}",
        }
        with httpx.stream("POST", url, json=INITIALIZE, headers=sent, timeout=30) as response:
            assert response.status_code == 200


TOKEN = "correct-horse-battery-staple"


@pytest.fixture(scope="module")
def token_url(corpus: Path) -> Iterator[str]:
    with serving_http(corpus, HAIKU_MCP_TOKEN=TOKEN) as url:
        yield url


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (None, 401),
        (f"Bearer {TOKEN}x", 401),
        (f"Basic {TOKEN}", 401),
        (f"Bearer {TOKEN}", 200),
        (f"bearer {TOKEN}", 200),  # the scheme is case-insensitive
    ],
)
def test_http_with_a_token_refuses_requests_without_it(
    token_url: str, authorization: str | None, status: int
) -> None:
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization is not None:
        sent["Authorization"] = authorization
    with httpx.stream("POST", token_url, json=INITIALIZE, headers=sent, timeout=30) as response:
        assert response.status_code == status
        if status == 401:
            assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_client_with_the_token_gets_the_whole_session(token_url: str) -> None:
    async def go() -> dict[str, Any]:
        with anyio.fail_after(START_TIMEOUT):
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
            async with http, Client(streamable_http_client(token_url, http_client=http)) as client:
                return await exercise(client)

    assert_first_session(anyio.run(go))
