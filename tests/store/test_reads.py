"""Documents of several databases read in one call equal those read database by database."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from haiku_cli.errors import InputError
from haiku_cli.store import reads
from haiku_cli.store.reads import get_documents, get_documents_of, list_documents
from tests.support.single_chunks import single_chunk_database


@pytest.mark.parametrize("bridged", [True, False])
def test_documents_of_several_databases_in_one_call(tmp_path: Path, monkeypatch, bridged: bool) -> None:
    first = single_chunk_database(tmp_path / "a.lancedb", ["alpha", "beta", "gamma"], [[1.0, 0.0]] * 3)
    second = single_chunk_database(tmp_path / "b.lancedb", ["delta", "epsilon"], [[0.0, 1.0]] * 2)
    a_ids = [d.id for d in list_documents(first)]
    b_ids = [d.id for d in list_documents(second)]
    if not bridged:  # as with a LanceDB release without the async table: the sync API, same documents
        monkeypatch.setattr(reads, "async_table", lambda table: None)
    else:
        assert reads.async_table(first.documents) is not None
    wanted = [(first, [a_ids[0], a_ids[2], "no-such-id"]), (second, b_ids)]
    found = get_documents_of(wanted)
    assert found == [get_documents(db, ids) for db, ids in wanted]
    assert [sorted(d.title for d in docs.values()) for docs in found] == [["d0", "d2"], ["d0", "d1"]]
    assert get_documents_of([(first, [])]) == [{}]


def test_an_invalid_filter_names_the_problem_without_lances_source_locations(tmp_path: Path) -> None:
    db = single_chunk_database(tmp_path / "a.lancedb", ["alpha"], [[1.0, 0.0]])
    # A function LanceDB has but not for a string column fails inside Lance, whose message ends in a .rs path.
    with pytest.raises(InputError) as raised:
        list_documents(db, where="json_extract(metadata, '$.project') = 'thesis'")
    message = str(raised.value)
    assert message.startswith("invalid filter \"json_extract(metadata, '$.project') = 'thesis'\": ")
    assert ".rs:" not in message and "/.cargo/" not in message


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("title = 'd0' garbage", "unexpected text after the condition: 'garbage'"),
        ("(title = 'd0') OR", "expected an expression, found the end of the filter"),
        ("(title = )", "expected an expression, found )"),
        ("title = 'd0')", "unexpected text after the condition: ')'"),
        ("(title = 'd0'", "a '(' is not closed"),
    ],
)
def test_a_filter_with_text_after_its_condition_is_refused_not_cut_short(
    tmp_path: Path, where: str, problem: str
) -> None:
    db = single_chunk_database(tmp_path / "a.lancedb", ["alpha", "beta"], [[1.0, 0.0]] * 2)
    with pytest.raises(InputError) as raised:
        list_documents(db, where=where)  # LanceDB alone matched the condition before the garbage: d0
    assert problem in str(raised.value)
    # Parentheses and semicolons inside strings are text, and a whole condition still filters.
    assert [d.title for d in list_documents(db, where="title = 'd0' OR uri = 'a;b(c'")] == ["d0"]


@pytest.mark.timeout(60)
def test_a_synchronous_lancedb_call_on_its_own_loop_fails_instead_of_hanging(tmp_path: Path) -> None:
    db = single_chunk_database(tmp_path / "a.lancedb", ["alpha"], [[1.0, 0.0]])
    bridge = reads.async_table(db.chunks)
    assert bridge is not None
    table, run = bridge

    async def awaits_lancedb() -> int:
        return await table.count_rows()

    async def calls_the_sync_api() -> int:
        return db.chunks.count_rows()  # blocks on the loop this coroutine runs on

    assert run(awaits_lancedb()) == 1
    with pytest.raises(reads.LoopReentry):
        run(calls_the_sync_api())
    assert run(awaits_lancedb()) == 1 and db.chunks.count_rows() == 1  # the loop still serves


def _metadata_database(tmp_path: Path):
    db = single_chunk_database(tmp_path / "m.lancedb", ["alpha", "beta", "gamma"], [[1.0, 0.0]] * 3)
    docs = list_documents(db)
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
    assert sorted(d.title for d in list_documents(db, where=where)) == titles


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("metadata.year > 1900", "metadata.year can be compared with =, != or IS [NOT] NULL"),
        ("created_at > 'last week'", "created_at compares with an ISO date or time such as '2024-01-31'"),
        ("author = 'me'", "there is no field author; a filter can name id, uri, title, metadata.KEY"),
    ],
)
def test_a_filter_naming_what_it_cannot_says_what_it_can_in_one_line(
    tmp_path: Path, where: str, problem: str
) -> None:
    db = _metadata_database(tmp_path)
    with pytest.raises(InputError) as raised:
        list_documents(db, where=where)
    message = str(raised.value)
    assert problem in message and "\n" not in message
    assert "Struct" not in message and "Timestamp" not in message
