"""`analyze()`: the answer, citations labelled with databases, and the programs run, from a scripted model."""

from __future__ import annotations

import anyio
import pytest

from haiku_cli.agents.analyze import AnalyzeResult, analyze
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError, ModelError
from tests.capabilities.analysis_script import cite_printed, execute
from tests.capabilities.script import Script, call, text

SHOPS = [
    {"text": "Receipt: 3 apples at the market.", "title": "Monday", "metadata": {"day": "mon"}},
    {"text": "Receipt: 5 apples and 2 pears.", "title": "Tuesday", "metadata": {"day": "tue"}},
]
GARDEN = [{"text": "The tree gave 40 apples this year.", "title": "Harvest", "metadata": {}}]

APPLES = (
    "import re, json\n"
    "rows = []\n"
    "for d in list_documents():\n"
    "    for line in open(d['path'] + 'chunks.jsonl'):\n"
    "        c = json.loads(line)\n"
    "        m = re.search(r'(\\d+) apples', c['text'])\n"
    "        if m:\n"
    "            rows.append((c['database'], int(m.group(1)), c['id']))\n"
    "for r in rows: print(*r)\n"
    "print('total', sum(r[1] for r in rows))"
)


@pytest.fixture
def ws(make_db, write_config, workspace) -> Workspace:
    """A workspace configuring two real databases, `shops` and `garden`."""
    shops, _ = make_db("shops", SHOPS)
    garden, _ = make_db("garden", GARDEN)
    write_config(f'[databases]\nshops = "{shops.uri}"\ngarden = "{garden.uri}"\n')
    return workspace()


def run(ws: Workspace, script: Script, question: str, *names: str, **kw) -> AnalyzeResult:
    selection: Selection = ws.select_many(list(names))
    return anyio.run(lambda: analyze(ws, selection, question, model=script.model, **kw))


def test_an_aggregate_over_all_databases_with_labelled_citations(ws: Workspace) -> None:
    script = Script(execute(APPLES), cite_printed(3), text("48 apples in all [1][2][3]."))
    result = run(ws, script, "How many apples in total?")

    assert result.grounded and not result.violation
    assert [e.ok for e in result.executions] == [True]
    assert "total 48" in result.executions[0].stdout
    assert result.executions[0].code == APPLES
    assert sorted(c.database for c in result.citations) == ["garden", "shops", "shops"]
    assert [c.index for c in result.citations] == [1, 2, 3]
    assert result.usage["requests"] == 3 and result.usage["tool_calls"] == 2
    assert set(result.state) == {"analysis", "citation_policy"}


def test_chunk_id_markers_become_numbers(ws: Workspace) -> None:
    ids: list[str] = []

    def cite(messages):
        step = cite_printed(1)(messages)
        ids.extend(step.parts[0].args["chunk_ids"])
        return step

    script = Script(execute(APPLES), cite, lambda _: text(f"Most apples came from the tree [{ids[0]}]."))
    result = run(ws, script, "Where did most apples come from?")
    assert result.answer.endswith("[1].")


def test_a_filter_and_a_scope_narrow_what_programs_see(ws: Workspace) -> None:
    script = Script(execute(APPLES), call(("cite", {"chunk_ids": []})), text("5 apples."))
    result = run(ws, script, "Apples on Tuesday?", "shops", document_filter="metadata LIKE '%tue%'")
    assert result.executions[0].stdout.splitlines()[-1] == "total 5"
    assert not result.grounded


def test_an_empty_question_is_refused(ws: Workspace) -> None:
    with pytest.raises(InputError, match="empty"):
        run(ws, Script(), "  ")


def test_no_model_configured_is_a_model_error(ws: Workspace) -> None:
    selection = ws.select_many()
    with pytest.raises(ModelError, match="no language model configured"):
        anyio.run(lambda: analyze(ws, selection, "How many?"))
