"""Filters name metadata keys and compare dates with ISO strings; what they cannot name is refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from haiku_cli.errors import InputError
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.reads import list_documents
from tests.support.single_chunks import single_chunk_database


def _metadata_database(tmp_path: Path) -> Database:
    db = single_chunk_database(tmp_path / "m.lancedb", ["alpha", "beta", "gamma"], [[1.0, 0.0]] * 3)
    docs = wait(list_documents(db))
    for doc, meta, day in zip(
        docs,
        [{"year": "1901", "kind": "lamp"}, {"year": 19, "kind": "it's"}, {"yearly": "1901"}],
        ["2023-05-01", "2024-06-01", "2025-01-02"],
        strict=True,
    ):
        when = datetime.fromisoformat(day).replace(tzinfo=UTC)
        db.documents.update(
            where=f"id = '{doc.id}'",
            values={"metadata": json.dumps(meta, ensure_ascii=False), "created_at": when},
        )
    return db


@pytest.mark.parametrize(
    ("where", "titles"),
    [
        ("metadata.year = '1901'", ["d0"]),
        ("metadata.year = 19", ["d1"]),
        ("metadata.year = '19'", ["d1"]),  # a number stored as one matches it quoted too
        ("metadata.year != '1901'", ["d1", "d2"]),
        ("metadata.kind = 'it''s' OR metadata.kind = 'lamp'", ["d0", "d1"]),
        ("metadata.kind IN ('lamp', 'it''s')", ["d0", "d1"]),
        ("metadata.year NOT IN (19, 'x')", ["d0", "d2"]),
        ("metadata.year IS NULL", ["d2"]),
        ("metadata.yearly IS NOT NULL AND title = 'd2'", ["d2"]),
        ("created_at > '2024-01-01'", ["d1", "d2"]),
        ("created_at < '2024-06-01T00:00:01+00:00'", ["d0", "d1"]),
        ("created_at BETWEEN '2024-01-01' AND '2024-12-31'", ["d1"]),
        ("title = 'created_at > ''x''' OR updated_at >= '2000-01-01'", ["d0", "d1", "d2"]),
    ],
)
def test_filters_name_metadata_keys_and_iso_dates(tmp_path: Path, where: str, titles: list[str]) -> None:
    db = _metadata_database(tmp_path)
    assert sorted(d.title for d in wait(list_documents(db, where=where))) == titles


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("metadata.year > 1900", "metadata.year can be compared with =, !=, [NOT] IN (...) or IS [NOT] NULL"),
        ("created_at > 'last week'", "created_at compares with an ISO date or time such as '2024-01-31'"),
        ("author = 'me'", "there is no field author; a filter can name id, uri, title, metadata.KEY"),
        ("metadata.year", "invalid filter 'metadata.year': metadata.year can be compared with"),
        ("title = 5", "invalid filter 'title = 5': 5 is not text; put the value in quotes, e.g. title = '5'"),
        (
            "created_at > 5",
            "5 is not a time; compare with an ISO date in quotes, e.g. created_at > '2024-01-31'",
        ),
    ],
)
def test_a_filter_naming_what_it_cannot_says_what_it_can_in_one_line(
    tmp_path: Path, where: str, problem: str
) -> None:
    db = _metadata_database(tmp_path)
    with pytest.raises(InputError) as raised:
        wait(list_documents(db, where=where))
    message = str(raised.value)
    assert problem in message and "\n" not in message
    assert "Struct" not in message and "Timestamp" not in message and "literal" not in message


def test_search_and_list_filter_on_metadata_and_dates_from_the_command_line(cli) -> None:
    cli("add", "Lanterns burn kerosene.", "--meta", "year=1901")
    cli("add", "Lanterns burn whale oil.", "--meta", "year=1850")
    found = json.loads(cli("search", "lanterns", "--filter", "metadata.year = 1901", "--json").stdout)
    assert [h["content"] for h in found["hits"]] == ["Lanterns burn kerosene."]
    listed = cli("list", "--filter", "created_at > '2000-01-01' AND metadata.year != '1901'", "--json")
    assert [d["metadata"] for d in json.loads(listed.stdout)["documents"]] == [{"year": "1850"}]
