"""The full-text analyzer applied to many texts at once gives each text's own terms."""

from __future__ import annotations

from pathlib import Path

from haiku_cli.store import EmbedderSpec, Location, open_database
from haiku_cli.store.blocking import wait
from haiku_cli.store.indexes import analyze


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
