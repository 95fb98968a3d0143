"""`haiku ask` end to end: the real CLI, real databases and a scripted OpenAI-compatible server."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from haiku_cli.api import AskResult
from haiku_cli.cli import output, render
from tests.capabilities.conftest import kb, kb_template
from tests.cli.openai_stub import Responder, StubServer, answer, serve, tool_call
from tests.support.silent_server import silent_server

__all__ = ["kb", "kb_template"]  # fixtures: databases `notes` and `papers`, configured by name

QUESTION = "What is the capital of France?"
_SHOWN_ID = re.compile(r"^\[([0-9a-f-]{36})\]", re.MULTILINE)


def _turns(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def _last_tool_result(body: dict[str, Any]) -> str:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"][-1]


def grounded(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Search, cite the first result, answer with a marker."""
    turn = _turns(body)
    if turn == 0:
        return tool_call("search", {"query": "capital of France"})
    if turn == 1:
        return tool_call("cite", {"chunk_ids": _SHOWN_ID.findall(_last_tool_result(body))[:1]}, "call_2")
    return answer("The capital of France is **Paris** [1].")


def ungrounded(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Search, find nothing relevant, declare the answer ungrounded."""
    turn = _turns(body)
    if turn == 0:
        return tool_call("search", {"query": "Icelandic volcanoes"})
    if turn == 1:
        return tool_call("cite", {"chunk_ids": []}, "call_2")
    return answer("The documents do not say.")


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Responder], StubServer]]:
    """Start a stub server scripted by a responder, and point `openai-chat:` models at it."""
    with ExitStack() as stack:

        def start(responder: Responder) -> StubServer:
            stub = stack.enter_context(serve(responder))
            monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "dummy")
            return stub

        yield start


def test_ask_json_through_a_real_openai_compatible_server(kb, cli, openai_env) -> None:
    stub = openai_env(grounded)
    result = cli("ask", QUESTION, "--model", "openai-chat:test", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    # Exactly the library model's dump: its keys, and it validates back to the same JSON.
    assert set(data) == set(AskResult.model_json_schema(mode="serialization")["properties"])
    assert AskResult.model_validate(data).model_dump(mode="json") == data
    assert data["answer"] == "The capital of France is **Paris** [1]."
    assert data["grounded"] is True and data["violation"] is False
    assert data["databases"] == ["notes", "papers"]
    [citation] = data["citations"]
    assert set(citation) == {
        "index", "database", "document_id", "document_uri", "document_title", "chunk_id", "content", "pages",
        "pictures", "char_start", "char_end", "line_start", "line_end", "source_state", "source_note",
    }  # fmt: skip
    assert (citation["index"], citation["database"], citation["document_title"]) == (1, "notes", "France")
    assert citation["source_state"] == "unknown" and "add-src" in citation["source_note"]  # added text
    assert "Paris" in citation["content"]
    assert data["usage"]["requests"] == 3 and data["usage"]["input_tokens"] == 60
    # What crossed the wire: the model by name, both tools offered, results labelled with ids and databases.
    first = stub.requests[0]
    assert first["model"] == "test"
    assert {t["function"]["name"] for t in first["tools"]} == {"search", "cite"}
    shown = _last_tool_result(stub.requests[1])
    assert f"[{citation['chunk_id']}] database: notes;" in shown


def test_ask_text_output_lists_citations(kb, cli, openai_env) -> None:
    openai_env(grounded)
    result = cli("ask", QUESTION, "--model", "openai-chat:test")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    # Piped, the answer is printed as written (no Markdown rendering, no colour codes).
    assert lines[0] == "The capital of France is **Paris** [1]."
    assert "Citations" in lines
    head = next(line for line in lines if line.startswith("[1] "))
    assert "France" in head and "[notes]" in head
    assert any("capital of France is Paris" in line for line in lines)
    assert "\x1b[" not in result.stdout
    assert result.stderr == ""


def test_ask_scoped_to_one_database(kb, cli, openai_env) -> None:
    stub = openai_env(grounded)
    result = cli("ask", QUESTION, "--database", "papers", "--model", "openai-chat:test", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["databases"] == ["papers"]
    assert {c["database"] for c in data["citations"]} == {"papers"}
    assert "database:" not in _last_tool_result(stub.requests[1])


def test_ungrounded_answer_is_marked(kb, cli, openai_env) -> None:
    openai_env(ungrounded)
    as_json = json.loads(cli("ask", "Which volcano erupted?", "--model", "openai-chat:test", "--json").stdout)
    assert as_json["grounded"] is False and as_json["citations"] == []
    assert "documents do not say" in as_json["answer"]
    text = cli("ask", "Which volcano erupted?", "--model", "openai-chat:test")
    assert text.exit_code == 0
    assert "The documents do not say." in text.stdout
    assert "not grounded in the documents" in text.stderr


def test_model_from_haiku_model_environment(kb, cli, openai_env, monkeypatch) -> None:
    stub = openai_env(grounded)
    monkeypatch.setenv("HAIKU_MODEL", "openai-chat:from-env")
    assert cli("ask", QUESTION, "--json").exit_code == 0
    assert stub.requests[0]["model"] == "from-env"


def test_rejected_key_is_one_line_and_exit_4(kb, cli, openai_env) -> None:
    openai_env(lambda body: (401, {"error": {"message": "Incorrect API key", "code": "invalid_api_key"}}))
    result = cli("ask", QUESTION, "--model", "openai-chat:test")
    assert result.exit_code == 4
    assert result.stderr.count("\n") == 1
    assert "rejected the credentials" in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_is_one_line_and_exit_4(kb, cli, monkeypatch) -> None:
    base_url = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there any more
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    result = cli("ask", QUESTION, "--model", "openai-chat:test")
    assert result.exit_code == 4
    assert result.stdout == ""
    assert result.stderr.startswith(f"haiku: cannot reach the model server at {base_url}")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_model_that_never_answers_fails_within_its_timeout(kb, cli, monkeypatch) -> None:
    # It accepts the request and sends nothing back: the configured limit ends the command, and says so.
    with silent_server() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "dummy")
        monkeypatch.setenv("HAIKU_MODEL_TIMEOUT", "0.5")
        result = cli("ask", QUESTION, "--model", "openai-chat:test")
    assert result.exit_code == 4
    assert result.stderr == (
        f"haiku: the model server at {server.url}/ did not answer within 0.5 s for 'openai-chat:test'; "
        "check the server, or raise [model] timeout_seconds (HAIKU_MODEL_TIMEOUT)\n"
    )


def test_a_model_that_answers_a_byte_at_a_time_fails_within_its_timeout(kb, cli, monkeypatch) -> None:
    # Each byte comes well within the timeout: only a bound on the whole request ends it.
    with silent_server(drip=0.1) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "dummy")
        monkeypatch.setenv("HAIKU_MODEL_TIMEOUT", "1")
        result = cli("ask", QUESTION, "--model", "openai-chat:test")
    assert result.exit_code == 4
    assert result.stderr.startswith(f"haiku: the model server at {server.url}/ did not answer within 1 s")


def test_an_empty_choice_list_is_a_model_failure(kb, cli, openai_env) -> None:
    status, reply = answer("unused")
    openai_env(lambda body: (status, {**reply, "choices": []}))
    result = cli("ask", QUESTION, "--model", "openai-chat:test")
    assert result.exit_code == 4
    # pydantic-ai names an empty answer itself from 2.7x on; before, its model class failed on it.
    line = result.stderr.removeprefix("haiku: model 'openai-chat:test' did not produce a usable answer: ")
    assert line in (
        "Empty response from openai chat completions endpoint: no choices\n",
        "its response could not be read (IndexError: list index out of range)\n",
    ), result.stderr


def test_no_model_configured_is_exit_4(cli) -> None:
    result = cli("ask", QUESTION)
    assert result.exit_code == 4
    assert result.stderr.strip() == (
        "haiku: no language model configured: set [model] name in the config file or HAIKU_MODEL, "
        "or pass --model (e.g. --model openai:gpt-4o)"
    )


@pytest.mark.parametrize(
    ("model", "what"),
    [
        ("nonsense", "unknown model 'nonsense'"),
        ("nosuch:model", "unknown model provider 'nosuch' in 'nosuch:model'"),
        ("test", None),  # pydantic-ai's own test model is a model string too
    ],
)
def test_an_unknown_model_string_is_one_line_with_the_form_and_exit_4(cli, kb, model, what) -> None:
    result = cli("ask", QUESTION, "--model", model)
    if what is None:
        assert result.exit_code == 0, result.stderr
        return
    assert result.exit_code == 4 and result.stdout == ""
    assert result.stderr == (
        f"haiku: {what}: a model looks like provider:model, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-0 "
        "or ollama:llama3.2\n"
    )


@pytest.mark.slow
def test_installed_cli_in_a_subprocess(kb, openai_env, tmp_path: Path) -> None:
    openai_env(grounded)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "haiku_cli", "ask", QUESTION, "--model", "openai-chat:test", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["grounded"] is True
    assert [(c["index"], c["database"]) for c in data["citations"]] == [(1, "notes")]


def test_markdown_is_rendered_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(output, "out", Console(file=buffer, force_terminal=True, width=80, color_system=None))
    render.answer("The capital is **Paris** [1].\n\n- first\n- second")
    shown = buffer.getvalue()
    assert "Paris" in shown and "**" not in shown
    assert "• first" in shown
