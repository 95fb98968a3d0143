"""`ask()`, the library function behind `haiku ask`, with the model scripted and real databases."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from haiku_cli.agents.ask import ask
from haiku_cli.agents.question import AskResult
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError, ModelError
from tests.capabilities.script import Script, call, chunk_ids, cite_first, search, text


def ask_sync(ws: Workspace, question: str, script: Script | None, **kwargs: Any) -> AskResult:
    names = kwargs.pop("databases", ())
    selection = ws.select_many(names)
    model = script.model if script is not None else kwargs.pop("model", None)
    return anyio.run(lambda: ask(ws, selection, question, model=model, **kwargs))


def test_grounded_answer_with_citations_usage_and_state(kb: Workspace) -> None:
    script = Script(search("capital of France"), cite_first(), text("The capital is **Paris** [1]."))
    result = ask_sync(kb, "What is the capital of France?", script)
    assert result.answer == "The capital is **Paris** [1]."
    assert result.grounded and not result.violation
    [citation] = result.citations
    assert (citation.index, citation.database, citation.document_title) == (1, "notes", "France")
    # Where the cited text stands: its characters in the document and its lines.
    assert (citation.char_start, citation.char_end, citation.line_start, citation.line_end) == (0, 59, 1, 1)
    assert result.usage["requests"] == 3 and result.usage["tool_calls"] == 2
    assert set(result.usage) == {"requests", "tool_calls", "input_tokens", "output_tokens"}
    # The state is plain JSON, one key per capability, and names the question's sources.
    state = json.loads(json.dumps(result.state))
    assert state["retrieval"]["sources"] == [
        {"name": "notes", "path": None},
        {"name": "papers", "path": None},
    ]
    assert state["citation_policy"]["outcome"] == "grounded"
    # The state is for Python callers only: every dump (the CLI's and MCP's JSON) leaves it out.
    assert "state" not in result.model_dump() and "state" not in result.model_dump(mode="json")


def test_a_configured_database_not_written_yet_is_skipped_and_named(
    kb: Workspace, write_config, workspace, tmp_path
) -> None:
    known = "".join(f'{name} = "{loc.uri}"\n' for name, loc in kb.locations.items())
    write_config(f'[databases]\n{known}later = "{tmp_path}/later.lancedb"\n')
    script = Script(search("capital of France"), cite_first(), text("The capital is Paris [1]."))
    result = ask_sync(workspace(), "What is the capital of France?", script)
    assert result.grounded and result.citations[0].database == "notes"
    assert result.databases == ["notes", "papers"] and result.not_created == ["later"]
    assert [s["name"] for s in result.state["retrieval"]["sources"]] == ["notes", "papers"]
    assert not (tmp_path / "later.lancedb").exists()


def test_chunk_id_markers_in_the_answer_become_numbers(kb: Workspace) -> None:
    script = Script(
        search("capital of France"),
        cite_first(),
        lambda messages: text(f"Paris [{chunk_ids(messages)[0]}]."),
    )
    assert ask_sync(kb, "capital?", script).answer == "Paris [1]."


def test_question_scoped_to_one_database(kb: Workspace) -> None:
    script = Script(search("capital of France"), cite_first(), text("ok [1]"))
    result = ask_sync(kb, "q", script, databases=["papers"])
    assert {c.database for c in result.citations} == {"papers"}
    assert result.state["retrieval"]["sources"] == [{"name": "papers", "path": None}]


def test_unsupported_answer_is_ungrounded(kb: Workspace) -> None:
    script = Script(search("volcanoes"), call(("cite", {"chunk_ids": []})), text("The documents do not say."))
    result = ask_sync(kb, "Which volcano erupted?", script)
    assert not result.grounded and result.citations == [] and not result.violation


def test_model_that_never_cites_is_a_violation(kb: Workspace) -> None:
    script = Script(search("capital of France"), text("Paris."), text("Paris."))
    result = ask_sync(kb, "q", script)
    assert result.violation and not result.grounded


def test_filter_travels_to_search(kb: Workspace) -> None:
    script = Script(search("anything"), cite_first(), text("ok [1]"))
    result = ask_sync(kb, "q", script, document_filter="title = 'Cells'")
    assert [c.document_title for c in result.citations] == ["Cells"]


def test_invalid_filter_is_an_input_error(kb: Workspace) -> None:
    with pytest.raises(InputError, match="invalid filter"):
        ask_sync(kb, "q", Script(search("x"), text("x")), document_filter="no_such_column = 1")


def test_empty_question(kb: Workspace) -> None:
    with pytest.raises(InputError, match="question is empty"):
        ask_sync(kb, "   ", Script())


def test_no_model_configured(kb: Workspace) -> None:
    with pytest.raises(ModelError, match="no language model configured"):
        ask_sync(kb, "q", None)
