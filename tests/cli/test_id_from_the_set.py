"""An id copied from a search over the set: `get`, `delete`, `pictures` and `visualize` find its database."""

from __future__ import annotations

import json
from pathlib import Path

from haiku_cli.errors import ExitCode


def _two_databases(make_db, write_config, tmp_path: Path) -> tuple[list[str], list[str]]:
    _, notes = make_db("notes", ["Tides follow the moon's pull on the oceans."])
    _, papers = make_db("papers", ["Glaciers carve valleys over thousands of years."])
    write_config(f'[databases]\nnotes = "{tmp_path}/notes.lancedb"\npapers = "{tmp_path}/papers.lancedb"\n')
    return notes, papers


def test_get_finds_the_one_database_holding_an_id(cli, make_db, write_config, tmp_path: Path) -> None:
    _, papers = _two_databases(make_db, write_config, tmp_path)
    result = cli("get", papers[0][:8], "--json")
    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["database"] == "papers" and "Glaciers" in shown["document"]["content"]


def test_get_finds_a_chunk_id_copied_from_a_search_over_the_set(cli, make_db, write_config, tmp_path) -> None:
    _two_databases(make_db, write_config, tmp_path)
    hits = json.loads(cli("search", "glaciers valleys", "--json").stdout)["hits"]
    top = next(h for h in hits if h["database"] == "papers")
    part = cli("get", "--chunk", top["chunk_id"], "--json")
    assert part.exit_code == 0, part.stderr
    assert json.loads(part.stdout)["database"] == "papers"


def test_delete_removes_it_from_the_database_holding_it_only(cli, make_db, write_config, tmp_path) -> None:
    notes, papers = _two_databases(make_db, write_config, tmp_path)
    deleted = cli("delete", notes[0][:8])
    assert deleted.exit_code == 0, deleted.stderr
    assert "from notes" in deleted.stdout
    assert json.loads(cli("list", "-d", "notes", "--json").stdout)["documents"] == []
    assert [d["id"] for d in json.loads(cli("list", "-d", "papers", "--json").stdout)["documents"]] == papers


def test_an_id_no_database_holds_is_refused_naming_the_set(cli, make_db, write_config, tmp_path) -> None:
    _two_databases(make_db, write_config, tmp_path)
    result = cli("get", "ffffffff")
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.strip() == (
        "haiku: no document or chunk with id, id prefix, uri or path 'ffffffff' in any configured "
        "database (notes, papers)"
    )


def test_a_source_in_two_databases_is_refused_naming_both(cli, write_config, tmp_path: Path) -> None:
    source = tmp_path / "tides.md"
    source.write_text("# Tides\n\nThe moon pulls the oceans.\n")
    write_config(f'[databases]\nnotes = "{tmp_path}/notes.lancedb"\npapers = "{tmp_path}/papers.lancedb"\n')
    for name in ("notes", "papers"):
        assert cli("add-src", str(source), "-d", name).exit_code == 0
    result = cli("get", str(source))
    assert result.exit_code == ExitCode.INPUT
    assert "several databases (notes, papers)" in result.stderr and "--database NAME" in result.stderr
    # Naming one still works, and nothing was deleted by the refusal.
    assert cli("get", str(source), "-d", "papers").exit_code == 0


def test_an_id_prefix_under_four_characters_says_so(cli, make_db, tmp_path: Path) -> None:
    make_db("notes", ["Tides follow the moon."])
    result = cli("get", "abc", "--db", str(tmp_path / "notes.lancedb"))
    assert result.exit_code == ExitCode.INPUT
    assert "an id prefix needs 4 characters or more; 'abc' has 3" in result.stderr


def test_one_database_commands_do_not_call_the_option_repeatable(cli) -> None:
    assert "repeatable" not in cli("get", "--help").stdout
    assert "repeatable" in cli("search", "--help").stdout
