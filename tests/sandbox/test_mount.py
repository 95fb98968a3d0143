"""The read-only /documents view: layout, laziness, scoping to the selection and refusing ambiguous ids."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import pytest

from haiku_cli.sandbox.catalog import DocumentCatalog
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
    assert out["files"] == ["chunks.jsonl", "content.txt", "metadata.json", "pictures", "pictures.json"]


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
    assert run.stdout.strip() == "2 8 True Owls"


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


async def test_a_duplicate_id_is_refused_after_listing_and_under_a_filter(open_box, corpus) -> None:
    doc_id = corpus.ids["alpha"][2]
    async with open_box("alpha", "gamma", document_filter="metadata LIKE '%wild%'") as box:
        docs = await box.execute("print(sorted(d['database'] for d in list_documents()))")
        run = await box.execute(f"open('/documents/{doc_id}/content.txt').read()")
    assert docs.stdout == "['alpha', 'gamma']\n"
    assert "held by more than one selected database ('alpha' and 'gamma')" in run.stderr


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


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The columns of every store query made while the test runs."""
    seen: list[list[str]] = []
    real = reads._query_rows

    def spy(db, table, where, cols, limit):
        seen.append(list(cols))
        return real(db, table, where, cols, limit)

    monkeypatch.setattr(reads, "_query_rows", spy)
    return seen


async def test_reads_are_lazy(corpus, queries: list[list[str]]) -> None:
    """Listing reads no content; a document's text is read when its file is read, chunks when theirs are."""
    ws = corpus.workspace()
    mount = DocumentMount(DocumentCatalog(ws.pool, corpus.selection("alpha", "beta")))
    ids = await mount.catalog.document_ids()
    assert len(ids) == 5
    assert len(queries) == 2 and not any("content" in c for c in queries)  # one listing per database
    queries.clear()
    path = PurePosixPath(f"/documents/{ids[0]}/content.txt")
    assert await mount.handle("open", (path, "r"), {}) is not None
    assert queries == []  # opening checks the listing, reads nothing
    text = await mount.handle("Path.read_text", (path,), {})
    assert text.startswith("The cat sat")
    assert len(queries) == 1 and "content" in queries[0]
    assert not any("document_id" in c for c in queries)  # chunks were not touched


async def test_reading_along_the_listing_fetches_texts_in_batches(open_box, corpus, queries) -> None:
    async with open_box("alpha", "beta") as box:
        await box.execute("docs = list_documents()")
        queries.clear()
        run = await box.execute("print(sum(len(open(d['path'] + 'content.txt').read()) > 0 for d in docs))")
    assert run.stdout == "5\n"
    assert len([c for c in queries if "content" in c]) == 2  # one batch per database, not one per document


async def test_an_id_found_by_search_is_readable_without_listing(open_box) -> None:
    async with open_box("alpha", "beta") as box:
        run = await box.execute(
            "hit = search('owls hunt at night', limit=1)[0]\n"
            "print(open(hit['path'] + 'metadata.json').read())"
        )
    assert '"title": "Owls"' in run.stdout and '"database": "beta"' in run.stdout


async def test_a_document_lists_its_pictures_and_their_bytes_are_readable(open_box, corpus) -> None:
    from tests.support.pictures import png

    doc_id = corpus.ids["figures"][0]
    async with open_box("figures") as box:
        run = await box.execute(
            "import json, os\n"
            "from pathlib import Path\n"
            f"base = '/documents/{doc_id}'\n"
            "listed = json.loads(open(base + '/pictures.json').read())\n"
            "data = Path(listed[0]['path']).read_bytes()\n"
            "print(json.dumps({'listed': listed, 'files': os.listdir(base + '/pictures'), 'size': len(data), "
            "'head': data[:4].hex(), 'stat': Path(listed[0]['path']).stat().st_size}))"
        )
    assert run.ok, run.stderr
    out = json.loads(run.stdout)
    [picture] = out["listed"]
    assert (picture["reference"], picture["caption"], picture["format"]) == ("image-1", "Revenue bars", "png")
    assert picture["path"] == f"/documents/{doc_id}/pictures/image-1.png"
    assert out["files"] == ["image-1.png"]
    assert out["size"] == out["stat"] == len(png(64, 48)) and out["head"] == "89504e47"
