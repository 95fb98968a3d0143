"""Hostile content and input: terminal escapes in stored text, trailing filter statements, huge queries."""

from __future__ import annotations

import json

from haiku_cli.errors import ExitCode

EVIL_TITLE = "Report\x1b]0;pwned\x07\x1b[2J\rFAKE"
EVIL_TEXT = "Kestrels hover over fields.\x1b[31m red \x1b[0m\u202e evil \x9b31m"


def test_escape_sequences_in_stored_text_are_shown_not_obeyed(cli, tmp_path) -> None:
    db = str(tmp_path / "h.lancedb")
    added = cli("add", EVIL_TEXT, "--title", EVIL_TITLE, "--db", db)
    assert added.exit_code == 0, added.stderr
    doc_id = json.loads(cli("list", "--db", db, "--json").stdout)["documents"][0]["id"]
    for args in (("search", "kestrels"), ("get", doc_id), ("list",)):
        shown = cli(*args, "--db", db)
        assert shown.exit_code == 0, shown.stderr
        for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
            assert raw not in shown.stdout, (args, raw)
        assert "\\x1b" in shown.stdout, args
    # JSON is for programs: it carries the text exactly as stored.
    assert json.loads(cli("get", doc_id, "--db", db, "--json").stdout)["document"]["title"] == EVIL_TITLE


def test_filter_with_trailing_statement_is_refused(cli, tmp_path) -> None:
    db = str(tmp_path / "h.lancedb")
    assert cli("add", "Owls hunt at night.", "--title", "a;b", "--db", db).exit_code == 0
    for command in (("search", "owls"), ("list",)):
        result = cli(*command, "--db", db, "--filter", "1=1; DROP TABLE chunks")
        assert result.exit_code == ExitCode.INPUT
        assert "unexpected text after the condition: '; DROP TABLE chunks'" in result.stderr
    # A semicolon inside a quoted value is just text.
    listed = cli("list", "--db", db, "--filter", "title = 'a;b'", "--json")
    assert listed.exit_code == 0 and len(json.loads(listed.stdout)["documents"]) == 1


def test_overlong_query_is_refused_with_the_limit(cli, tmp_path) -> None:
    db = str(tmp_path / "h.lancedb")
    assert cli("add", "Owls hunt at night.", "--db", db).exit_code == 0
    result = cli("search", "owl " * 5_000, "--db", db)
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.strip() == (
        "haiku: the search query is 20,000 characters long; the most is 10,000: "
        "search with its key words or a short passage"
    )
