"""`haiku analyze` end to end: the real CLI, databases and sandbox, and a scripted OpenAI server."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.openai_server import ScriptedOpenAI, say, tool_calls, tool_results

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


def cite_printed(body: dict) -> dict:
    """Cite every chunk id the program printed."""
    return tool_calls(("cite", {"chunk_ids": UUID.findall(tool_results(body, "execute_code")[-1])}))


@pytest.fixture
def configured(make_db, write_config):
    """Two real databases and a model pointing at a scripted server; yields a function starting the server."""
    shops, _ = make_db("shops", SHOPS)
    garden, _ = make_db("garden", GARDEN)

    def start(*replies) -> ScriptedOpenAI:
        server = ScriptedOpenAI(*replies)
        write_config(
            f'[databases]\nshops = "{shops.uri}"\ngarden = "{garden.uri}"\n'
            f'[model]\nname = "{server.model}"\nbase_url = "{server.base_url}"\n'
        )
        return server

    return start


def test_analyze_prints_the_programs_the_answer_and_labelled_sources(cli, configured) -> None:
    with configured(
        tool_calls(("execute_code", {"code": PROGRAM})), cite_printed, say("48 apples in all [1][2][3].")
    ) as server:
        result = cli("analyze", "How many apples in total?", "--show-code")

    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "program 1 ok" in out
    assert "list_documents()" in out and "total 48" in out
    assert "48 apples in all [1][2][3]." in out
    assert "Sources" in out
    assert re.search(r"\[\d\] Harvest\s+\(garden\)", out)
    assert re.search(r"\[\d\] Monday\s+\(shops\)", out)
    # The model was offered the three tools, and saw the program's output.
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert offered == {"execute_code", "search", "cite"}
    assert "total 48" in tool_results(server.requests[1], "execute_code")[0]


def test_analyze_json_adds_the_executions(cli, configured) -> None:
    with configured(
        tool_calls(("execute_code", {"code": "print(len(list_documents()))"})),
        tool_calls(("execute_code", {"code": "1 / 0"})),
        tool_calls(("cite", {"chunk_ids": []})),
        say("There are 3 documents."),
    ):
        result = cli("analyze", "How many documents?", "--json", "--database", "shops")

    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["answer"] == "There are 3 documents."
    assert data["grounded"] is False and data["citations"] == []
    assert data["databases"] == ["shops"]
    first, second = data["executions"]
    assert set(first) == {"code", "stdout", "stderr", "ok"}
    assert first == {"code": "print(len(list_documents()))", "stdout": "2\n", "stderr": "", "ok": True}
    assert second["ok"] is False and "ZeroDivisionError" in second["stderr"]


def test_analyze_without_code_flag_hides_programs(cli, configured) -> None:
    with configured(
        tool_calls(("execute_code", {"code": "print('secret-output')"})),
        tool_calls(("cite", {"chunk_ids": []})),
        say("Done."),
    ):
        result = cli("analyze", "Anything?")
    assert result.exit_code == 0, result.stderr
    assert "secret-output" not in result.stdout
    assert "Done." in result.stdout


def test_analyze_an_unknown_database_is_an_input_error(cli, configured) -> None:
    with configured(say("unused")):
        result = cli("analyze", "How many?", "--database", "nope")
    assert result.exit_code == 1
    assert "unknown database 'nope'" in result.stderr
