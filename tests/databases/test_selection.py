"""The selection rules: sets for search/ask/analyze, exactly one database for everything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from haiku_cli.config import load_settings
from haiku_cli.databases.selection import configured, select_many, select_one
from haiku_cli.errors import InputError

THREE = """
[databases]
notes = "/tmp/n.lancedb"
papers = "/tmp/p.lancedb"
mail = { uri = "s3://b/mail.lancedb" }
"""


def test_default_database_when_none_configured(isolated: Path) -> None:
    settings, _ = load_settings()
    sel = select_many(configured(settings))
    assert sel.names == ["default"]
    assert select_one(configured(settings)).uri == str(isolated / "data" / "default.lancedb")


def test_set_covers_all_configured_by_default(write_config) -> None:
    write_config(THREE)
    settings, _ = load_settings()
    assert select_many(configured(settings)).names == ["notes", "papers", "mail"]
    assert select_many(configured(settings), ["papers", "notes", "papers"]).names == ["papers", "notes"]


def test_single_refuses_to_guess_among_several(write_config) -> None:
    write_config(THREE)
    settings, _ = load_settings()
    with pytest.raises(InputError) as err:
        select_one(configured(settings))
    msg = str(err.value)
    assert "notes, papers, mail" in msg and "--database" in msg and "--db" in msg
    assert select_one(configured(settings), ["mail"]).uri == "s3://b/mail.lancedb"


def test_single_refuses_two_names(write_config) -> None:
    write_config(THREE)
    settings, _ = load_settings()
    with pytest.raises(InputError, match="one database"):
        select_one(configured(settings), ["notes", "papers"])


def test_unknown_name_lists_configured(write_config) -> None:
    write_config(THREE)
    settings, _ = load_settings()
    with pytest.raises(
        InputError, match="unknown database 'nope'; configured databases: notes, papers, mail"
    ):
        select_many(configured(settings), ["nope"])


def test_names_and_paths_together_refused(write_config, tmp_path: Path) -> None:
    write_config(THREE)
    settings, _ = load_settings()
    with pytest.raises(InputError, match="not both"):
        select_many(configured(settings), ["notes"], [tmp_path / "x.lancedb"])
    with pytest.raises(InputError, match="not both"):
        select_one(configured(settings), ["notes"], [tmp_path / "x.lancedb"])


def test_paths_are_named_by_stem(write_config, tmp_path: Path) -> None:
    settings, _ = load_settings()
    sel = select_many(configured(settings), paths=[tmp_path / "a.lancedb", tmp_path / "b.lancedb"])
    assert sel.names == ["a", "b"]
    with pytest.raises(InputError, match="both named 'a'"):
        select_many(configured(settings), paths=[tmp_path / "a.lancedb", tmp_path / "sub" / "a.lancedb"])


def test_selection_of_nothing_is_an_error(write_config) -> None:
    from haiku_cli.databases.selection import Selection

    with pytest.raises(InputError, match="names no database"):
        Selection(())
