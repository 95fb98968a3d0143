"""The full-text analyzer: many texts at once give each text's own terms, and a search's are the index's."""

from __future__ import annotations

import warnings
from pathlib import Path

from haiku_cli.search.lookups import Reads, Unbounded
from haiku_cli.store import EmbedderSpec, Location, open_database
from haiku_cli.store.blocking import wait
from haiku_cli.store.index_reads import FTS_INDEX, analyze, analyze_locally, analyzes_as_haiku


def test_many_texts_analyzed_in_one_call_match_one_by_one(tmp_path: Path) -> None:
    db = open_database(Location("t", str(tmp_path / "t.lancedb")), create_with=EmbedderSpec("t:e", 4))
    texts = [
        "Rivers carry sediment to the sea.",
        "",
        "The and of",  # stop words only: no terms
        "Zzhaikutextbreakzz is not a separator when a text holds it",
        "Café naïve résumé, ÜBER-fast!",
    ]
    expected = [wait(analyze(db.chunks, [t]))[0] for t in texts]  # one by one
    assert expected[0] and expected[2] == []
    assert wait(analyze(db.chunks, texts)) == expected
    assert wait(analyze(db.chunks, [t for t in texts if "zzhaiku" not in t.lower()])) == [
        e for t, e in zip(texts, expected, strict=True) if "zzhaiku" not in t.lower()
    ]


def test_a_search_analyses_as_the_index_does_whether_or_not_its_settings_are_haikus(tmp_path: Path) -> None:
    """A haiku index's analyzer runs in the searching thread; one made with other settings (another
    program's, an older layout's) is asked itself, so a query's terms are always the index's."""
    texts = ["The Running children's CAFÉ, résumés and foo_bar", "Rivers carry sediment to the sea."]
    db = open_database(Location("t", str(tmp_path / "t.lancedb")), create_with=EmbedderSpec("t:e", 4))
    by_index = wait(analyze(db.chunks, texts))
    assert wait(analyzes_as_haiku(db))
    assert wait(Reads(Unbounded()).analyze(db, texts)) == by_index == analyze_locally(texts)

    other = open_database(Location("o", str(tmp_path / "o.lancedb")), create_with=EmbedderSpec("t:e", 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other.chunks.create_fts_index("search_text", stem=False, name=FTS_INDEX, replace=True)
    unstemmed = wait(analyze(other.chunks, texts))
    assert unstemmed != by_index and "running" in unstemmed[0]
    assert not wait(analyzes_as_haiku(other))
    assert wait(Reads(Unbounded()).analyze(other, texts)) == unstemmed
