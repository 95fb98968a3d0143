"""`haiku mcp` start-up failures: each one line on stderr and a documented exit code."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest


def test_missing_sdk_names_the_extra(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # what an install without the extra sees
    result = cli("mcp")
    assert result.exit_code == 1
    assert (
        result.stderr == "haiku: haiku mcp needs the MCP SDK: install it with pip install 'mcp>=2.3,<3' "
        "(or pip install '.[mcp]' in haiku's checkout)\n"
    )


def test_a_taken_port_is_one_line(cli, make_db) -> None:
    notes, _ = make_db("notes", ["Owls hunt at night."])  # a database to serve, else that is the failure
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("mcp", "--http", "--port", str(port), "--db", notes.uri)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"haiku: cannot listen on 127.0.0.1:{port}: ")
    assert result.stderr.endswith("choose another --port\n") and result.stderr.count("\n") == 1


def test_an_unknown_database_is_refused_before_serving(cli) -> None:
    result = cli("mcp", "--database", "nope")
    assert result.exit_code == 1
    assert result.stderr.startswith("haiku: unknown database 'nope'")


@pytest.mark.parametrize(
    ("port", "expected"),
    [
        ("abc", "expected a whole number, got 'abc'"),
        ("99999", "expected a port number from 0 to 65535, got '99999'"),
        ("-1", "expected a port number from 0 to 65535, got '-1'"),
    ],
)
def test_a_port_that_is_not_one_says_what_to_give(cli, port: str, expected: str) -> None:
    # Typer's own wording for `--port abc` was pydantic's ("Input should be a valid integer ...").
    result = cli("mcp", "--http", "--port", port)
    assert result.exit_code == 2
    assert f"Invalid value for '--port': {expected}" in result.stderr and "Input should" not in result.stderr


def test_the_docs_install_the_extra_from_the_checkout_not_from_an_index() -> None:
    root = Path(__file__).parents[2]
    for doc in ("README.md", "docs/mcp.md"):
        text = (root / doc).read_text(encoding="utf-8")
        assert "haiku-cli[mcp]" not in text and "pip install '.[mcp]'" in text, doc


def test_a_database_nothing_was_added_to_is_named_before_serving(cli, tmp_path: Path) -> None:
    result = cli("mcp", "--db", str(tmp_path / "empty.lancedb"), input="")
    assert result.exit_code == 3
    assert result.stderr.startswith("haiku: database 'empty' does not exist yet; add documents to it first")
    assert result.stdout == ""  # never served: no answer to anything


def test_with_some_databases_written_the_others_are_noted_and_the_rest_served(
    cli, make_db, tmp_path: Path
) -> None:
    notes, _ = make_db("notes", ["Owls hunt at night."])
    result = cli("mcp", "--db", notes.uri, "--db", str(tmp_path / "later.lancedb"), input="")
    assert result.exit_code == 0  # served until stdin closed
    note = "haiku: note: 'later' has nothing added yet; searches skip it until something is\n"
    assert result.stderr == note


_SERVE_THEN_LIST = """
import json, runpy, sys
sys.argv = ["haiku", "mcp"]
try:
    runpy.run_module("haiku_cli", run_name="__main__")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("haiku_cli", "pydantic_ai", "lancedb")))))
"""


@pytest.mark.parametrize("model", [None, "openai-chat:gpt-4o"])
def test_a_server_loads_no_agent_and_opens_no_database_before_its_first_answer(
    make_db, write_config, model: str | None
) -> None:
    # What it loads before its first answer is its start-up's cost (benchmarks/server_memory.py); with a
    # model, `ask` and `analyze` are listed, yet pydantic-ai loads with the first question.
    location, _ = make_db("notes", ["Owls hunt at night."])
    write_config(f'[databases]\nnotes = "{location.uri}"\n')
    env = {k: v for k, v in os.environ.items() if k != "HAIKU_MODEL"}
    done = subprocess.run(
        [sys.executable, "-c", _SERVE_THEN_LIST],
        env={**env, "HAIKU_NO_DAEMON": "1", **({"HAIKU_MODEL": model} if model else {})},
        stdin=subprocess.DEVNULL,  # the client closes at once: served, then done
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert "haiku_cli.mcp_server.server" in loaded  # it did serve
    assert ("haiku_cli.mcp_server.answering" in loaded) is (model is not None)  # with ask and analyze
    assert [m for m in loaded if m.startswith(("pydantic_ai", "haiku_cli.agents.question"))] == []
    assert "lancedb" not in loaded  # no database opened: LanceDB loads with the first read
