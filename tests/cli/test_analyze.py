"""`haiku analyze` end to end: the real CLI, databases and sandbox, and a scripted OpenAI server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from tests.cli.openai_stub import Reply, StubServer, answer, serve, tool_call

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SHOPS = [
    {"text": "Receipt: 3 apples at the market.", "title": "Monday"},
    {"text": "Receipt: 5 apples and 2 pears.", "title": "Tuesday"},
]
GARDEN = [{"text": "The tree gave 40 apples this year.", "title": "Harvest"}]
PROGRAM = (
    "import re, json\n"
    "total = 0\n"
    "for d in list_documents():\n"
    "    for line in open(d['path'] + 'chunks.jsonl'):\n"
    "        c = json.loads(line)\n"
    "        m = re.search(r'(\\d+) apples', c['text'])\n"
    "        if m:\n"
    "            total += int(m.group(1))\n"
    "            print(c['database'], m.group(1), c['id'])\n"
    "print('total', total)"
)
Step = Reply | Callable[[dict[str, Any]], Reply]


def execution_results(body: dict[str, Any]) -> list[str]:
    """What the execute_code calls returned, as sent to the model in this request."""
    names = {c["id"]: c["function"]["name"] for m in body["messages"] for c in m.get("tool_calls") or []}
    return [
        m["content"]
        for m in body["messages"]
        if m["role"] == "tool" and names.get(m["tool_call_id"]) == "execute_code"
    ]


def cite_printed(body: dict[str, Any]) -> Reply:
    """Cite every chunk id the latest program printed."""
    return tool_call("cite", {"chunk_ids": UUID.findall(execution_results(body)[-1])}, "call_cite")


def execute(code: str, n: int = 0) -> Reply:
    """A turn running one program."""
    return tool_call("execute_code", {"code": code}, f"call_exec_{n}")


def scripted(*steps: Step) -> Callable[[dict[str, Any]], Reply]:
    """A responder playing step n on the model's n-th turn (counted from the assistant messages)."""

    def respond(body: dict[str, Any]) -> Reply:
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if turn >= len(steps):
            return 500, {"error": {"message": f"the script has {len(steps)} steps", "type": "server_error"}}
        step = steps[turn]
        return step(body) if callable(step) else step

    return respond


@pytest.fixture
def configured(make_db, write_config) -> Iterator[Callable[..., StubServer]]:
    """Two real databases, and a configured model pointing at a scripted server the test starts."""
    shops, _ = make_db("shops", SHOPS)
    garden, _ = make_db("garden", GARDEN)
    with ExitStack() as stack:

        def start(*steps: Step) -> StubServer:
            stub = stack.enter_context(serve(scripted(*steps)))
            write_config(
                f'[databases]\nshops = "{shops.uri}"\ngarden = "{garden.uri}"\n'
                f'[model]\nname = "openai-chat:scripted"\nbase_url = "{stub.base_url}"\n'
            )
            return stub

        yield start


def test_analyze_prints_the_programs_the_answer_and_labelled_citations(cli, configured) -> None:
    server = configured(execute(PROGRAM), cite_printed, answer("48 apples in all [1][2][3]."))
    result = cli("analyze", "How many apples in total?", "--show-code")

    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "program 1 ok" in out
    assert "list_documents()" in out and "total 48" in out
    assert "48 apples in all [1][2][3]." in out
    assert "Citations" in out
    assert re.search(r"\[\d\] Harvest\s+\[garden\]", out)
    assert re.search(r"\[\d\] Monday\s+\[shops\]", out)
    # The model was offered the three tools, and read the program's output.
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert offered == {"execute_code", "search", "cite"}
    assert "total 48" in execution_results(server.requests[1])[0]


def test_analyze_json_adds_the_executions(cli, configured) -> None:
    configured(
        execute("print(len(list_documents()))"),
        execute("1 / 0", 1),
        tool_call("cite", {"chunk_ids": []}, "call_cite"),
        answer("There are 2 documents."),
    )
    result = cli("analyze", "How many documents?", "--json", "--database", "shops")

    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["answer"] == "There are 2 documents."
    assert data["grounded"] is False and data["citations"] == []
    assert data["databases"] == ["shops"]
    first, second = data["executions"]
    assert first == {"code": "print(len(list_documents()))", "stdout": "2\n", "stderr": "", "ok": True}
    assert second["ok"] is False and "ZeroDivisionError" in second["stderr"]


def test_analyze_without_show_code_prints_no_programs(cli, configured) -> None:
    configured(
        execute("print('secret-output')"), tool_call("cite", {"chunk_ids": []}, "call_cite"), answer("Done.")
    )
    result = cli("analyze", "Anything?")
    assert result.exit_code == 0, result.stderr
    assert "secret-output" not in result.stdout
    assert "Done." in result.stdout


def test_analyze_an_unknown_database_is_an_input_error(cli, configured) -> None:
    configured(answer("unused"))
    result = cli("analyze", "How many?", "--database", "nope")
    assert result.exit_code == 1
    assert "unknown database 'nope'" in result.stderr


def test_a_database_not_written_yet_is_skipped_and_named(cli, configured, write_config, isolated) -> None:
    configured(
        execute("print(len(list_documents()))"),
        tool_call("cite", {"chunk_ids": []}, "call_cite"),
        answer("There are 3 documents."),
    )
    config = (isolated / "config.toml").read_text(encoding="utf-8")
    write_config(config.replace("[model]", f'later = "{isolated}/later.lancedb"\n[model]'))
    result = cli("analyze", "How many documents?", "--json")

    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["databases"] == ["shops", "garden"] and data["not_created"] == ["later"]
    assert data["executions"][0]["stdout"] == "3\n"
    assert "'later' is not created yet" in result.stderr
