"""`haiku history` names the commands that wrote the database, not only raw table versions."""

from __future__ import annotations

import json
from pathlib import Path


def test_history_lists_the_write_commands_newest_first(cli, tmp_path: Path) -> None:
    note = tmp_path / "tides.md"
    note.write_text("# Tides\n\nSpring tides follow the moon.\n", encoding="utf-8")
    assert cli("add", "Lanterns burn kerosene.", "--title", "Lamps").exit_code == 0
    assert cli("add-src", str(note)).exit_code == 0
    assert cli("add-src", str(note)).exit_code == 0  # unchanged: nothing written, nothing logged
    assert cli("delete", str(note)).exit_code == 0
    assert cli("vacuum").exit_code == 0
    found = json.loads(cli("history", "--json").stdout)
    operations = [w["operation"] for w in found["writes"]]
    doc_id = json.loads(cli("list", "--json").stdout)["documents"][0]["id"]
    assert operations[0] == "vacuum" and operations[2:] == [f"add-src {note}", "add 'Lamps'"]
    assert (
        operations[1].startswith("delete ")
        and operations[1].endswith(" (Tides)")
        and doc_id not in operations[1]
    )
    assert set(found["writes"][0]["versions"]) >= {"documents", "chunks"} and found["versions"]
    text = cli("history").stdout.splitlines()
    assert text[0].split() == ["time", "command", "versions"]
    assert "vacuum" in text[1] and f"add-src {note}" in text[3] and "add 'Lamps'" in text[4]
    assert "documents v" in text[4]


def test_rebuild_is_logged_though_its_new_chunks_table_may_have_the_old_ones_version(cli) -> None:
    assert cli("add", "Lanterns burn kerosene.", "--title", "Lamps").exit_code == 0
    for _ in range(2):
        done = cli("rebuild")
        assert done.exit_code == 0 and done.stdout.startswith("rebuilt default: 1 chunk, 1 kept its id (")
    operations = [w["operation"] for w in json.loads(cli("history", "--json").stdout)["writes"]]
    assert operations == ["rebuild", "rebuild", "add 'Lamps'"]


def test_info_names_the_same_tables_as_history(cli, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "tides.md").write_text("# Tides\n\nSpring tides follow the moon.\n", encoding="utf-8")
    assert cli("add-src", str(folder)).exit_code == 0
    written = json.loads(cli("history", "--json").stdout)["writes"][0]["versions"]
    assert {"sources", "source_files"} <= set(written)
    assert json.loads(cli("info", "--json").stdout)["versions"] == written
