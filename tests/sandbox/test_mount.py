"""The read-only /documents view: layout, laziness, scoping to the selection and refusing ambiguous ids."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import pytest

from haiku_cli.sandbox.mount import DocumentMount
from haiku_cli.store import reads

pytestmark = pytest.mark.anyio


async def test_each_document_has_metadata_content_and_chunks(open_box, corpus) -> None:
    doc_id = corpus.ids["alpha"][0]
    async with open_box("alpha") as box:
        run = await box.execute(
            "import json\n"
            f"base = '/documents/{doc_id}'\n"
            "meta = json.loads(open(base + '/metadata.json').read())\n"
            "text = open(base + '/content.txt').read()\n"
            "chunks = [json.loads(line) for line in open(base + '/chunks.jsonl').read().splitlines()]\n"
            "import os\n"
            "files = sorted(os.listdir(base))\n"
            "print(json.dumps({'meta': meta, 'text': text, 'chunks': chunks, 'files': files}))"
        )
    assert run.ok, run.stderr
    out = json.loads(run.stdout)
    assert out["meta"]["database"] == "alpha"
    assert out["meta"]["title"] == "Cats"
    assert out["meta"]["metadata"] == {"kind": "pet"}
    assert out["text"].startswith("The cat sat on the mat.")
    assert out["chunks"][0]["document_id"] == doc_id
    assert out["chunks"][0]["database"] == "alpha"
    assert out["files"] == ["chunks.jsonl", "content.txt", "metadata.json"]


async def test_listing_documents_shows_every_id_of_the_selection(open_box, corpus) -> None:
    async with open_box("alpha", "beta") as box:
        run = await box.execute("import os\nprint(sorted(os.listdir('/documents')))")
    assert run.ok, run.stderr
    assert run.stdout.strip() == repr(sorted(corpus.ids["alpha"] + corpus.ids["beta"]))


async def test_pathlib_walk_and_glob_work(open_box, corpus) -> None:
    async with open_box("beta") as box:
        run = await box.execute(
            "from pathlib import Path\n"
            "import os\n"
            "texts = sorted(p.read_text() for p in Path('/documents').glob('*/content.txt'))\n"
            "walked = sum(len(files) for _, _, files in os.walk('/documents'))\n"
            "print(len(texts), walked, Path('/documents').is_dir(), texts[0][:4])"
        )
    assert run.ok, run.stderr
    assert run.stdout.strip() == "2 6 True Owls"


async def test_a_question_scoped_to_one_database_cannot_see_another(open_box, corpus) -> None:
    beta_id = corpus.ids["beta"][0]
    async with open_box("alpha") as box:
        listed = await box.execute("import os\nprint(len(os.listdir('/documents')))")
        read = await box.execute(f"open('/documents/{beta_id}/content.txt').read()")
        exists = await box.execute(f"from pathlib import Path\nprint(Path('/documents/{beta_id}').exists())")
        docs = await box.execute("print(sorted({d['database'] for d in list_documents()}))")
        hits = await box.execute("print(sorted({h['database'] for h in search('secret word heliotrope')}))")
    assert listed.stdout.strip() == "3"
    assert not read.ok
    assert "FileNotFoundError" in read.stderr and beta_id in read.stderr
    assert "heliotrope" not in read.stdout + read.stderr
    assert exists.stdout.strip() == "False"
    assert docs.stdout.strip() == "['alpha']"
    assert hits.stdout.strip() == "['alpha']"


async def test_an_id_held_by_two_selected_databases_is_refused_naming_both(open_box, corpus) -> None:
    doc_id = corpus.ids["alpha"][0]
    async with open_box("alpha", "gamma") as box:
        run = await box.execute(f"open('/documents/{doc_id}/content.txt').read()")
        listed = await box.execute("import os\nprint(len(os.listdir('/documents')))")
    assert not run.ok
    assert "held by more than one selected database ('alpha' and 'gamma')" in run.stderr
    assert "The cat sat" not in run.stdout
    # Listed once: the id exists, it just cannot be attributed to one database.
    assert listed.stdout.strip() == "3"


async def test_the_filter_narrows_listing_and_reading(open_box, corpus) -> None:
    wild, pet = corpus.ids["alpha"][2], corpus.ids["alpha"][0]
    async with open_box("alpha", document_filter="metadata LIKE '%wild%'") as box:
        listed = await box.execute("import os\nprint(os.listdir('/documents'))")
        hidden = await box.execute(f"open('/documents/{pet}/content.txt').read()")
        shown = await box.execute(f"print(open('/documents/{wild}/content.txt').read()[:6])")
        docs = await box.execute("print([d['title'] for d in list_documents()])")
    assert listed.stdout.strip() == repr([wild])
    assert "FileNotFoundError" in hidden.stderr
    assert shown.stdout.strip() == "A lion"
    assert docs.stdout.strip() == "['Lions']"


async def test_reads_are_lazy(corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing reads ids only; a document's content is read when (and only when) its file is opened."""
    columns: list[list[str]] = []
    real = reads._query_rows

    def spy(db, table, where, cols, limit):
        columns.append(list(cols))
        return real(db, table, where, cols, limit)

    monkeypatch.setattr(reads, "_query_rows", spy)
    ws = corpus.workspace()
    mount = DocumentMount(ws.pool, corpus.selection("alpha", "beta"))
    ids = await mount.document_ids()
    assert len(ids) == 5
    assert columns == [["id"], ["id"]]  # one id-only read per database
    columns.clear()
    text = await mount.handle("Path.read_text", (PurePosixPath(f"/documents/{ids[0]}/content.txt"),), {})
    assert text.startswith("The cat sat")
    assert any("content" in c for c in columns)
    assert not any("document_id" in c for c in columns)  # chunks were not touched
