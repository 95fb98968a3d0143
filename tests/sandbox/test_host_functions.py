"""`search` and `list_documents` inside the sandbox: the same selection, each result labelled."""

from __future__ import annotations

import json

import pytest

from haiku_cli.config.settings import SandboxSettings, Settings
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.sandbox.corpus import open_corpus_sandbox
from haiku_cli.search.hits import SearchHit
from haiku_cli.store.location import Location

pytestmark = pytest.mark.anyio


async def test_search_fans_out_over_the_selection_with_database_labels(open_box) -> None:
    async with open_box("alpha", "beta") as box:
        run = await box.execute(
            "import json\nhits = search('birds singing in the morning', limit=3)\nprint(json.dumps(hits))"
        )
    assert run.ok, run.stderr
    hits = json.loads(run.stdout)
    assert len(hits) == 3
    assert hits[0]["database"] == "beta" and hits[0]["document_title"] == "Sparrows"
    assert {h["database"] for h in hits} <= {"alpha", "beta"}
    # The fields `haiku search --json` gives each hit, and the document's folder.
    assert set(hits[0]) == set(SearchHit.model_fields) | set(SearchHit.model_computed_fields) | {"path"}
    assert hits[0]["path"] == f"/documents/{hits[0]['document_id']}/"


async def test_list_documents_lists_the_selection_without_content(open_box, corpus) -> None:
    async with open_box("alpha", "beta") as box:
        run = await box.execute("import json\nprint(json.dumps(list_documents()))")
    docs = json.loads(run.stdout)
    assert [(d["database"], d["title"]) for d in docs] == [
        ("alpha", "Cats"),
        ("alpha", "Dogs"),
        ("alpha", "Lions"),
        ("beta", "Sparrows"),
        ("beta", "Owls"),
    ]
    assert docs[0]["id"] == corpus.ids["alpha"][0]
    assert docs[0]["metadata"] == {"kind": "pet"}
    assert "content" not in docs[0]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("search('')", "ValueError: search() query is empty"),
        ("search(42)", "TypeError: search() query must be a string"),
        ("search('cat', limit=0)", "ValueError: search() limit must be an integer from 1 to 50"),
        ("search('cat', limit=1000)", "ValueError: search() limit must be an integer from 1 to 50"),
        ("search('cat', bogus=1)", "TypeError"),
        ("list_documents(1)", "TypeError"),
    ],
)
async def test_bad_arguments_raise_inside_the_sandbox(open_box, call: str, expected: str) -> None:
    async with open_box("alpha") as box:
        run = await box.execute(call)
    assert not run.ok
    assert expected in run.stderr


async def test_search_reports_what_the_program_saw(corpus) -> None:
    seen: list[SearchHit] = []
    ws = corpus.workspace()
    async with open_corpus_sandbox(ws, corpus.selection("beta"), on_hits=seen.extend) as box:
        run = await box.execute("len(search('owls at night', limit=2))")
    assert run.stdout == "2\n"
    assert [h.database for h in seen] == ["beta", "beta"]


async def test_an_invalid_filter_is_a_clear_error_inside_the_sandbox(open_box) -> None:
    async with open_box("alpha", document_filter="no_such_column = 1") as box:
        run = await box.execute("list_documents()")
        listed = await box.execute("import os\nos.listdir('/documents')")
    assert "ValueError: invalid filter" in run.stderr
    assert "OSError: invalid filter" in listed.stderr


@pytest.fixture
def fat_db(make_db) -> Location:
    """A database whose owl document carries a megabyte of metadata, returned with every hit on it."""
    fat = {"text": "Owls hunt at night.", "title": "Owls", "metadata": {"notes": "n" * 2**20}}
    location, _ = make_db("fat", [fat, "Wrens sing at dawn."])
    return location


async def test_search_results_too_big_for_the_sandbox_memory_are_refused(fat_db: Location, embedder) -> None:
    location = fat_db
    seen: list[SearchHit] = []
    ws = Workspace(Settings(sandbox=SandboxSettings(memory_mb=2)), embedder=embedder)
    async with open_corpus_sandbox(ws, Selection((location,)), on_hits=seen.extend) as box:
        refused = await box.execute("hits = search('owls at night', limit=2)")
        small = await box.execute("print(search('wrens', limit=1)[0]['document_title'])")
    assert "MemoryError: search() would return more than 0.5 MB" in refused.stderr
    assert "the sandbox's 2 MB of memory; ask for less at a time" in refused.stderr
    assert small.ok and small.stdout == "Wrens sing at dawn.\n"
    assert [h.document_title for h in seen] == ["Wrens sing at dawn."]  # the refused hits were never seen
