"""`--at TAG` on the commands that ask a model (`ask`, `analyze`, `chat`) and on `mcp`: each reads every
database as it was at the tag, and a database without the tag stops the command naming it.

Real tags on real databases (`notes` and `papers`); the model is a scripted FunctionModel.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import pytest
from pydantic_ai.messages import ModelMessage

from haiku_cli.errors import ExitCode
from tests.capabilities.analysis_script import cite_printed, execute, last_output
from tests.capabilities.conftest import kb, kb_template
from tests.capabilities.script import cite_first, search, text
from tests.cli.scripted_model import MODEL, scripted

__all__ = ["kb", "kb_template", "scripted"]  # fixtures: `notes` and `papers` configured by name; the model


@pytest.fixture
def tagged(kb, cli) -> None:
    """Tag both databases `before`, then delete the France note: only the tag still holds Paris."""
    made = cli("tag", "create", "before", "--all")
    assert made.exit_code == 0, made.stderr
    documents = json.loads(cli("list", "--json", "-d", "notes").stdout)["documents"]
    (france,) = [d["id"] for d in documents if d["title"] == "France"]
    assert cli("delete", france, "-d", "notes").exit_code == 0
    # A tag only `notes` has: reading the set at it must name `papers`.
    assert cli("tag", "create", "notes-only", "-d", "notes").exit_code == 0


def _capital() -> tuple[Any, ...]:
    return (search("capital of France"), cite_first(), text("Paris [1]."))


def _missing_tag(result: Any) -> None:
    assert result.exit_code == ExitCode.DATABASE and result.stdout == "", result.stderr
    assert "papers" in result.stderr and "notes-only" in result.stderr and "Traceback" not in result.stderr


def test_ask_at_a_tag_cites_what_the_tag_holds(tagged, cli, scripted) -> None:
    scripted(*_capital())
    result = cli("ask", "Capital of France?", *MODEL, "--at", "before", "--json")
    assert result.exit_code == 0, result.stderr
    [cited] = json.loads(result.stdout)["citations"]
    assert "Paris" in cited["content"] and cited["database"] == "notes"
    script = scripted(*_capital())
    now = cli("ask", "Capital of France?", *MODEL, "--json")
    assert now.exit_code == 0, now.stderr
    assert "Paris" not in str(script.seen[1])  # the note is deleted since: the search no longer shows it
    assert all("Paris" not in c["content"] for c in json.loads(now.stdout)["citations"])


def test_ask_at_a_tag_a_database_lacks_names_it(tagged, cli, scripted) -> None:
    script = scripted(*_capital())
    _missing_tag(cli("ask", "Capital of France?", *MODEL, "--at", "notes-only"))
    assert script.seen == []  # refused before the model was asked
    assert cli("ask", "Capital?", *MODEL, "--at", "notes-only", "-d", "notes").exit_code == 0


COUNT = "print(len(list_documents())); print([c['chunk_id'] for c in search('capital of France', limit=1)])"


def _analysis(seen: list[str]) -> tuple[Any, ...]:
    def answer(messages: list[ModelMessage]) -> Any:
        seen.append(last_output(messages))
        return text("Counted [1].")

    return (execute(COUNT), cite_printed(), answer)


def test_analyze_at_a_tag_runs_over_what_the_tag_holds(tagged, cli, scripted) -> None:
    outputs: list[str] = []
    scripted(*_analysis(outputs))
    result = cli("analyze", "How many documents?", *MODEL, "--at", "before", "--json")
    assert result.exit_code == 0, result.stderr
    scripted(*_analysis(outputs))
    assert cli("analyze", "How many documents?", *MODEL, "--json").exit_code == 0
    counts = [o.split("stdout:\n")[-1].splitlines()[0] for o in outputs]
    assert counts == ["4", "3"], outputs  # the France note is only at the tag
    then = json.loads(result.stdout)["citations"]
    assert "Paris" in then[0]["content"]


def test_analyze_at_a_tag_a_database_lacks_names_it(tagged, cli, scripted) -> None:
    script = scripted(*_analysis([]))
    _missing_tag(cli("analyze", "How many documents?", *MODEL, "--at", "notes-only"))
    assert script.seen == []


def test_chat_at_a_tag_answers_from_what_the_tag_holds(tagged, cli, scripted) -> None:
    scripted(*_capital())
    result = cli("chat", *MODEL, "--session", "then", "--at", "before", input="Capital of France?\n")
    assert result.exit_code == 0, result.stderr
    assert "Paris [1]." in result.stdout and "France  [notes]" in result.stdout


def test_chat_at_a_tag_a_database_lacks_names_it(tagged, cli, scripted) -> None:
    script = scripted(*_capital())
    _missing_tag(cli("chat", *MODEL, "--at", "notes-only", input="Capital of France?\n"))
    assert script.seen == []


@pytest.mark.slow
def test_mcp_at_a_tag_serves_what_the_tag_holds(tagged) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from tests.mcp_server.conftest import START_TIMEOUT, haiku_command

    command, *args = haiku_command()
    # The test's config (HAIKU_CONFIG) names `notes` and `papers`; the server is a process of its own.
    served = [*args, "mcp", "--at", "before"]
    params = StdioServerParameters(command=command, args=served, env=dict(os.environ))

    async def go() -> tuple[set[str], list[str]]:
        with anyio.fail_after(START_TIMEOUT):
            async with Client(params) as client:
                found = await client.call_tool("search", {"query": "capital of France", "limit": 1})
                listed = await client.call_tool("list_documents", {"database": "notes"})
        hits = {h["content"] for h in found.structured_content["hits"]}
        return hits, [d["title"] for d in listed.structured_content["documents"]]

    hits, titles = anyio.run(go)
    assert any("Paris" in h for h in hits) and "France" in titles


def test_mcp_at_a_tag_a_database_lacks_names_it_before_serving(tagged, cli) -> None:
    _missing_tag(cli("mcp", "--at", "notes-only", input=""))
    assert cli("mcp", "--at", "notes-only", "-d", "notes", input="").exit_code == 0  # served, stdin closed
