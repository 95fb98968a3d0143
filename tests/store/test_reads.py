"""Documents of several databases read in one call equal those read database by database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from haiku_cli.errors import InputError
from haiku_cli.store.blocking import wait
from haiku_cli.store.reads import documents_of, get_documents, list_documents
from tests.support.single_chunks import single_chunk_database


def test_documents_of_several_databases_in_one_call(tmp_path: Path) -> None:
    first = single_chunk_database(tmp_path / "a.lancedb", ["alpha", "beta", "gamma"], [[1.0, 0.0]] * 3)
    second = single_chunk_database(tmp_path / "b.lancedb", ["delta", "epsilon"], [[0.0, 1.0]] * 2)
    a_ids = [d.id for d in wait(list_documents(first))]
    b_ids = [d.id for d in wait(list_documents(second))]
    wanted = [(first, [a_ids[0], a_ids[2], "no-such-id"]), (second, b_ids)]
    found = asyncio.run(documents_of(wanted))
    assert found == [wait(get_documents(db, ids)) for db, ids in wanted]
    assert [sorted(d.title for d in docs.values()) for docs in found] == [["d0", "d2"], ["d0", "d1"]]
    assert asyncio.run(documents_of([(first, [])])) == [{}]


def test_an_invalid_filter_names_the_problem_without_lances_source_locations(tmp_path: Path) -> None:
    db = single_chunk_database(tmp_path / "a.lancedb", ["alpha"], [[1.0, 0.0]])
    # A function LanceDB has but not for a string column fails inside Lance, whose message ends in a .rs path.
    with pytest.raises(InputError) as raised:
        wait(list_documents(db, where="json_extract(metadata, '$.project') = 'thesis'"))
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
        wait(list_documents(db, where=where))  # LanceDB alone matched the condition before the garbage: d0
    assert problem in str(raised.value)
    # Parentheses and semicolons inside strings are text, and a whole condition still filters.
    assert [d.title for d in wait(list_documents(db, where="title = 'd0' OR uri = 'a;b(c'"))] == ["d0"]


def test_synchronous_code_waits_on_the_one_async_read(tmp_path: Path) -> None:
    """The write path's threads read through `blocking.wait`: the same result and errors as awaiting."""
    import threading

    db = single_chunk_database(tmp_path / "a.lancedb", ["alpha", "beta"], [[1.0, 0.0]] * 2)
    awaited = asyncio.run(list_documents(db))
    results: list[object] = []
    thread = threading.Thread(target=lambda: results.append(wait(list_documents(db))))
    thread.start()
    thread.join()
    assert results == [awaited] and [d.title for d in awaited] == ["d0", "d1"]
    with pytest.raises(InputError, match="there is no field nope"):
        wait(list_documents(db, where="nope = 1"))

    async def nested() -> None:
        wait(list_documents(db))  # on the loop's own thread it would wait for itself forever

    with pytest.raises(RuntimeError, match="wait for itself"):
        wait(nested())
