"""Fan-out search: one labelled ranking over a set, scoped strictly to the selection."""

from __future__ import annotations

import shutil
from itertools import pairwise
from pathlib import Path

import anyio
import numpy as np
import pytest

from haiku_cli.databases import fanout, operations
from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import DatabaseError, InputError
from haiku_cli.store import EmbedderSpec, Location, open_database
from haiku_cli.store.document_writes import write_documents
from tests.conftest import fill
from tests.support.single_chunks import single_chunk_database, word_texts

NOTES = [
    {"text": "The espresso machine needs descaling every month with citric acid.", "title": "Coffee care"},
    {"text": "Sourdough starter must be fed flour and water daily to stay active.", "title": "Baking"},
]
PAPERS = [
    {
        "text": "We measure espresso extraction yield against grind size and water temperature.",
        "title": "Extraction",
    },
    {
        "text": "Transformer models attend over token sequences with multi-head attention.",
        "title": "Attention",
    },
]


def _search(ws, selection, query, **kw):
    return anyio.run(lambda: operations.search_hits(ws, selection, query, **kw))


def test_hits_from_every_database_are_labelled(make_db, workspace) -> None:
    notes, _ = make_db("notes", NOTES)
    papers, _ = make_db("papers", PAPERS)
    hits = _search(workspace(), Selection((notes, papers)), "espresso", limit=4)
    assert {h.database for h in hits[:2]} == {"notes", "papers"}
    assert all(h.document_title for h in hits)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in pairwise(hits))


def test_scoped_search_never_reaches_other_databases(make_db, workspace, tmp_path: Path) -> None:
    notes, _ = make_db("notes", NOTES)
    make_db("papers", PAPERS)
    ws = workspace()
    for kind in ("hybrid", "vector", "fts"):
        hits = _search(ws, Selection((notes,)), "espresso extraction attention", search_type=kind, limit=10)
        assert hits and {h.database for h in hits} == {"notes"}
    # The one rule: only the selection's databases are opened at all.
    dbs = anyio.run(lambda: ws.pool.clients_covering(Selection((notes,))))
    assert [d.name for d in dbs] == ["notes"]
    assert all(key[0] == "notes" for key in ws.pool._open)
    # A broken database outside the selection does not matter; inside it, it fails the whole search.
    broken = Location("broken", str(tmp_path / "missing.lancedb"))
    assert _search(ws, Selection((notes,)), "espresso")
    with pytest.raises(DatabaseError, match="database 'broken' does not exist"):
        _search(ws, Selection((notes, broken)), "espresso")


def test_unopenable_databases_are_all_named(workspace, tmp_path: Path) -> None:
    a = Location("a", str(tmp_path / "a.lancedb"))
    b = Location("b", str(tmp_path / "b.lancedb"))
    with pytest.raises(DatabaseError) as err:
        _search(workspace(), Selection((a, b)), "anything")
    lines = str(err.value).splitlines()
    assert len(lines) == 2 and "'a'" in lines[0] and "'b'" in lines[1]


def test_different_embedders_only_by_full_text(make_db, workspace, tmp_path: Path) -> None:
    notes, _ = make_db("notes", NOTES)
    other = Location("other", str(tmp_path / "other.lancedb"))
    db = open_database(other, create_with=EmbedderSpec("test:tiny", 4), writable=True)
    from datetime import UTC, datetime

    from haiku_cli.store import DocumentRecord, DocumentWrite, NewChunk

    now = datetime.now(UTC)
    doc = DocumentRecord(
        id="d1", title="Other", content="espresso notes", content_hash="h", created_at=now, updated_at=now
    )
    write_documents(
        db,
        [DocumentWrite(document=doc, chunks=[NewChunk(order=0, text="espresso notes", vector=[1, 0, 0, 0])])],
    )
    ws = workspace()
    with pytest.raises(InputError) as err:
        _search(ws, Selection((notes, other)), "espresso", search_type="hybrid")
    assert "notes (haiku:all-minilm-l6-v2)" in str(err.value) and "other (test:tiny)" in str(err.value)
    hits = _search(ws, Selection((notes, other)), "espresso", search_type="fts")
    assert {h.database for h in hits} == {"notes", "other"}
    # Agents cannot pick a type: "auto" falls back to full text alone across embedders.
    auto = _search(ws, Selection((notes, other)), "espresso", search_type="auto")
    assert [(h.database, h.content) for h in auto] == [(h.database, h.content) for h in hits]


def test_copied_database_results_are_both_labelled(make_db, workspace, tmp_path: Path) -> None:
    notes, _ = make_db("notes", NOTES)
    shutil.copytree(tmp_path / "notes.lancedb", tmp_path / "copy.lancedb")
    copy = Location("copy", str(tmp_path / "copy.lancedb"))
    hits = _search(workspace(), Selection((notes, copy)), "espresso descaling", limit=2)
    assert {h.database for h in hits} == {"notes", "copy"}
    assert hits[0].chunk_id == hits[1].chunk_id


def test_filter_on_document_fields(make_db, workspace) -> None:
    notes, _ = make_db("notes", [{**NOTES[0], "metadata": {"topic": "coffee"}}, NOTES[1]])
    ws = workspace()
    hits = _search(ws, Selection((notes,)), "daily care", document_filter="title = 'Baking'")
    assert [h.document_title for h in hits] == ["Baking"]
    assert _search(ws, Selection((notes,)), "care", document_filter="title = 'Nope'") == []
    hits = _search(ws, Selection((notes,)), "care", document_filter="metadata LIKE '%coffee%'")
    assert [h.document_title for h in hits] == ["Coffee care"]
    with pytest.raises(InputError, match="invalid filter"):
        _search(ws, Selection((notes,)), "care", document_filter="title === 'x'")


def test_query_with_punctuation_does_not_break_full_text(make_db, workspace) -> None:
    notes, _ = make_db("notes", NOTES)
    for query in ['"espresso" AND (machine', "C++ / -- ;", "what's up?"]:
        _search(workspace(), Selection((notes,)), query, search_type="fts")


def test_empty_query_is_refused(make_db, workspace) -> None:
    notes, _ = make_db("notes", NOTES)
    with pytest.raises(InputError, match="empty"):
        _search(workspace(), Selection((notes,)), "   ")


CORPUS = [
    {"title": f"Note {i}", "text": text}
    for i, text in enumerate(
        [
            "Relevance feedback lets users refine a query from the documents they mark as useful.",
            "Library catalogues index books by subject headings and author names.",
            "Inverted files map each term to the documents that contain it, for fast retrieval.",
            "Precision and recall measure how well a retrieval system finds relevant documents.",
            "Citation indexes link papers to the papers that cite them.",
            "Automatic indexing assigns terms to documents without a human indexer.",
            "Boolean retrieval matches documents with AND, OR and NOT over index terms.",
            "Probabilistic models rank documents by their estimated probability of relevance.",
            "Thesauri relate index terms that mean nearly the same thing.",
        ]
    )
]


@pytest.fixture(scope="module")
def split_once(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """CORPUS in one database (`whole`) and split over three (`part0..2`), embedded once for the module."""
    folder = tmp_path_factory.mktemp("split")
    (folder / "config.toml").touch()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HAIKU_CONFIG", str(folder / "config.toml"))
        env.setenv("HAIKU_DATA_DIR", str(folder / "data"))
        ws = Workspace.load(embedder=embedder)
        fill(ws, Location("whole", str(folder / "whole.lancedb")), CORPUS)
        for i in range(3):
            fill(ws, Location(f"part{i}", str(folder / f"part{i}.lancedb")), CORPUS[i::3])
    return folder


@pytest.fixture
def split(split_once: Path, tmp_path: Path) -> tuple[Location, list[Location]]:
    """A copy of them for each test (which may write to them, and must not share a cached version)."""

    def copy(name: str) -> Location:
        return Location(
            name, str(shutil.copytree(split_once / f"{name}.lancedb", tmp_path / f"{name}.lancedb"))
        )

    return copy("whole"), [copy(f"part{i}") for i in range(3)]


@pytest.mark.parametrize("kind", ["fts", "vector", "hybrid"])
def test_a_corpus_split_across_databases_ranks_as_in_one(split, workspace, kind: str) -> None:
    whole, parts = split
    ws = workspace()
    query = "retrieval of relevant documents by index terms"
    single = _search(ws, Selection((whole,)), query, search_type=kind, limit=9)
    split = _search(ws, Selection(tuple(parts)), query, search_type=kind, limit=9)
    assert [h.content for h in split] == [h.content for h in single]
    assert [h.score for h in split] == pytest.approx([h.score for h in single], rel=1e-4)
    assert {h.database for h in split} == {"part0", "part1", "part2"}


def test_split_ranking_follows_a_write_after_statistics_were_cached(split, workspace) -> None:
    whole, parts = split
    ws = workspace()
    query = "retrieval of relevant documents by index terms"
    before = _search(ws, Selection(tuple(parts)), query, search_type="fts", limit=9)
    # New chunks holding the query's terms change their frequencies and the average length.
    extra = [
        {"title": "More", "text": "Retrieval of documents by index terms, index terms and more index terms."}
    ]
    for location in (whole, parts[1]):
        anyio.run(
            lambda loc=location: operations.add_text(ws, loc, extra[0]["text"], title="More", metadata={})
        )
    ws = workspace()  # a fresh pool opens the new versions; the statistics cache is process-wide
    single = _search(ws, Selection((whole,)), query, search_type="fts", limit=10)
    split = _search(ws, Selection(tuple(parts)), query, search_type="fts", limit=10)
    assert len(split) == 10
    assert [h.content for h in split] == [h.content for h in single]
    assert [h.score for h in split] == pytest.approx([h.score for h in single], rel=1e-4)
    unchanged = [h for h in split if h.content != extra[0]["text"]]
    assert [h.score for h in unchanged] != [h.score for h in before]  # rescored under the new statistics


def test_full_text_split_ranks_as_one_from_each_databases_best_few(tmp_path: Path) -> None:
    # 90 chunks, most matching: each of 3 databases gives only its best 3 x limit, rescored set-wide.
    rng = np.random.default_rng(11)
    texts = word_texts(rng, 90)
    single_chunk_database(tmp_path / "whole.lancedb", texts, [[1.0, 0.0]] * len(texts))
    for i in range(3):
        single_chunk_database(tmp_path / f"part{i}.lancedb", texts[i::3], [[1.0, 0.0]] * 30)
    whole = Selection((Location("whole", str(tmp_path / "whole.lancedb")),))
    parts = Selection(tuple(Location(f"part{i}", str(tmp_path / f"part{i}.lancedb")) for i in range(3)))
    pool = DatabasePool()

    def search(selection: Selection, query: str) -> list[tuple[float, str]]:
        found = anyio.run(
            lambda: fanout.search_set(pool, selection, query, embed_query=None, search_type="fts", limit=4)
        )
        return sorted((round(h.score, 4), h.content) for h in found)

    for query in ["flood basin silt", "tidal estuary channels and levees"]:
        one, split = search(whole, query), search(parts, query)
        assert len(one) == 4 and split == one


def test_a_filtered_split_search_ranks_as_one_and_keeps_to_the_filter(split, workspace) -> None:
    whole, parts = split
    query = "retrieval of relevant documents by index terms"
    searches = [
        (kind, document_filter)
        for kind in ("fts", "vector", "hybrid")
        for document_filter in (None, "title IN ('Note 0', 'Note 2', 'Note 6', 'Note 7')")
    ]

    def found() -> list[list[tuple[str, str, float]]]:
        ws = workspace()
        return [
            [
                (h.database, h.content, round(h.score, 5))
                for h in _search(
                    ws, Selection(tuple(parts)), query, search_type=kind, document_filter=f, limit=9
                )
            ]
            for kind, f in searches
        ]

    split = found()
    single = _search(workspace(), Selection((whole,)), query, search_type="fts", limit=9)
    assert [content for _, content, _ in split[0]] == [h.content for h in single]
    filtered = {content for hits in split[1::2] for _, content, _ in hits}
    assert filtered == {CORPUS[i]["text"] for i in (0, 2, 6, 7)}


def test_a_database_whose_files_are_gone_is_named(make_db, workspace, tmp_path: Path) -> None:
    notes, _ = make_db("notes", NOTES)
    papers, _ = make_db("papers", PAPERS)
    ws = workspace()
    assert _search(ws, Selection((notes, papers)), "espresso", search_type="fts")
    for data in (tmp_path / "papers.lancedb").glob("chunks*.lance/data/*"):
        data.unlink()
    for kind in ("fts", "hybrid"):
        with pytest.raises(DatabaseError, match=r"^database 'papers' cannot be read: "):
            _search(workspace(), Selection((notes, papers)), "espresso", search_type=kind)


def _unit(angle: float) -> list[float]:
    return [float(np.cos(angle)), float(np.sin(angle))]


def _ranking(selection: Selection, query: str, kind: str, limit: int, vector=None) -> list[tuple[str, float]]:
    async def embed(text: str) -> np.ndarray:
        return np.asarray(vector, dtype=np.float32)

    found = anyio.run(
        lambda: fanout.search_set(
            DatabasePool(), selection, query, embed_query=embed, search_type=kind, limit=limit
        )
    )
    return [(h.content, round(h.score, 4)) for h in found]


def test_a_hybrid_split_fuses_the_pool_one_database_would_have_had(tmp_path: Path) -> None:
    # More chunks than the pool of 50 of each kind: 50 close to the query with none of its words, 50 full
    # of its word and unrelated in meaning, and 10 middling in both, each in neither of the set's top 50.
    close = [(f"calm water number{i}", _unit(0.05 + 0.002 * i)) for i in range(50)]
    worded = [(f"owl owl owl tag{i}", _unit(1.56 - 0.0002 * i)) for i in range(50)]
    middling = [(f"owl stone river cloud grass mark{i}", _unit(0.65 + 0.002 * i)) for i in range(10)]
    everything = close + worded + middling
    single_chunk_database(tmp_path / "whole.lancedb", *zip(*everything, strict=True))
    single_chunk_database(tmp_path / "rest.lancedb", *zip(*(close + worded), strict=True))
    single_chunk_database(tmp_path / "middle.lancedb", *zip(*middling, strict=True))
    whole = Selection((Location("whole", str(tmp_path / "whole.lancedb")),))
    split = Selection(tuple(Location(n, str(tmp_path / f"{n}.lancedb")) for n in ("middle", "rest")))
    one = _ranking(whole, "owl", "hybrid", 10, vector=[1.0, 0.0])
    assert not any(text.startswith("owl stone") for text, _ in one)
    # The middling chunks top the middle database's own pool; fused as found they would outrank the rest.
    assert _ranking(split, "owl", "hybrid", 10, vector=[1.0, 0.0]) == one


def test_a_full_text_split_finds_a_chunk_its_database_ranks_below_the_limit(tmp_path: Path) -> None:
    # In `birds` the rare word is falcon, so its two falcon chunks rank first there; across the set falcon
    # is common (in every chunk of `rocks`) and heron rare, so birds' heron chunks are the set's best.
    birds = ["falcon falcon stone", "falcon falcon cloud"]
    birds += ["heron " + " ".join(["reed"] * n) for n in range(1, 5)]
    birds += [f"marsh grass{i} mud" for i in range(10)]
    rocks = [f"falcon granite{i} basalt slate" for i in range(40)] + [f"quartz{i} mica" for i in range(40)]
    texts = birds + rocks
    single_chunk_database(tmp_path / "whole.lancedb", texts, [[1.0, 0.0]] * len(texts))
    single_chunk_database(tmp_path / "birds.lancedb", birds, [[1.0, 0.0]] * len(birds))
    single_chunk_database(tmp_path / "rocks.lancedb", rocks, [[1.0, 0.0]] * len(rocks))
    whole = Selection((Location("whole", str(tmp_path / "whole.lancedb")),))
    split = Selection(tuple(Location(n, str(tmp_path / f"{n}.lancedb")) for n in ("birds", "rocks")))
    one = _ranking(whole, "falcon heron", "fts", 2)
    assert [text.split()[0] for text, _ in one] == ["heron", "heron"]
    assert _ranking(split, "falcon heron", "fts", 2) == one


def test_full_text_over_two_databases_reads_its_hits_with_its_candidates() -> None:
    # A second read of each database holding a hit costs more than it saves at 30 candidates over 2
    # (benchmarks/README.md); over 3 or more, or for hybrid's pool of 50, it saves.
    assert not fanout.reads_hits_apart("fts", fanout.candidate_depth(10, "fts", 2), 10, 2)
    assert fanout.reads_hits_apart("fts", fanout.candidate_depth(10, "fts", 3), 10, 3)
    assert fanout.reads_hits_apart("hybrid", fanout.candidate_depth(10, "hybrid", 2), 10, 2)
    assert not fanout.reads_hits_apart("vector", fanout.candidate_depth(10, "vector", 4), 10, 4)


def test_a_database_giving_exactly_as_many_full_text_candidates_as_asked_is_not_taken_for_every_match(
    tmp_path: Path,
) -> None:
    # `birds` holds 8 short heron chunks and 3 long ones that mention falcon once: its best 6 (what a
    # search of 2 over two databases asks each for) are all heron, exactly 6, so they are not every match:
    # falcon is in 3 of its chunks, and the set's falcon scores must count them.
    birds = [f"heron heron heron reed{i}" for i in range(8)]
    birds += ["falcon " + " ".join(f"grass{i}x{j}" for j in range(120)) for i in range(3)]
    birds += [f"marsh mud{i}" for i in range(30)]
    rocks = ["falcon falcon " + " ".join(["slate"] * n) for n in range(1, 5)]
    rocks += [f"quartz{i} mica" for i in range(30)]
    texts = birds + rocks
    single_chunk_database(tmp_path / "whole.lancedb", texts, [[1.0, 0.0]] * len(texts))
    single_chunk_database(tmp_path / "birds.lancedb", birds, [[1.0, 0.0]] * len(birds))
    single_chunk_database(tmp_path / "rocks.lancedb", rocks, [[1.0, 0.0]] * len(rocks))
    whole = Selection((Location("whole", str(tmp_path / "whole.lancedb")),))
    split = Selection(tuple(Location(n, str(tmp_path / f"{n}.lancedb")) for n in ("birds", "rocks")))
    assert fanout.candidate_depth(2, "fts", 2) == 6
    own = _ranking(Selection((Location("birds", str(tmp_path / "birds.lancedb")),)), "falcon heron", "fts", 7)
    assert [text.split()[0] for text, _ in own] == ["heron"] * 7  # its best 6, and more, are heron
    one = _ranking(whole, "falcon heron", "fts", 2)
    assert one[0][0].startswith("falcon falcon")  # scored by how many chunks hold falcon, birds' too
    ranked = _ranking(split, "falcon heron", "fts", 2)
    # (Birds' heron chunks tie: which of them comes is not the point.)
    assert [(text.split()[0], score) for text, score in ranked] == [(t.split()[0], s) for t, s in one]
