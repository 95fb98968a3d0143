"""The one-database commands through the CLI, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haiku_cli.errors import ExitCode
from tests.support.single_chunks import single_chunk_database


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "guide").mkdir(parents=True)
    (folder / "guide" / "config.md").write_text(
        "# Configuration\n\n## Databases\n\nName each database in the [databases] table of config.toml; "
        "a value is a path or an s3:// URI.\n",
        encoding="utf-8",
    )
    (folder / "search.txt").write_text("Hybrid search fuses vector similarity with BM25 full-text scores.\n")
    (folder / ".hidden.md").write_text("# Secret\n\nnever indexed\n")
    return folder


def test_add_src_then_search_human_and_json(cli, docs: Path) -> None:
    added = cli("add-src", str(docs))
    assert added.exit_code == 0, added.stderr
    assert added.stdout.count("added") == 2 and "Secret" not in added.stdout
    found = cli("search", "how do I configure a database", "--limit", "2")
    assert found.exit_code == 0
    assert (
        found.stdout.lstrip().startswith("1.")
        and "Configuration" in found.stdout
        and "[default]" in found.stdout
    )
    as_json = json.loads(cli("search", "BM25 fusion", "--json").stdout)
    assert as_json["query"] == "BM25 fusion" and as_json["databases"] == ["default"]
    top = as_json["hits"][0]
    for key in (
        "database",
        "document_id",
        "document_uri",
        "document_title",
        "chunk_id",
        "content",
        "score",
        "rank",
    ):
        assert key in top
    assert top["database"] == "default" and top["document_uri"].endswith("search.txt") and top["rank"] == 1


def test_file_addresses_search_prints_add_the_same_document(cli, tmp_path: Path) -> None:
    note = tmp_path / "field notes é.md"
    note.write_text("# Notes\n\nLanterns burn kerosene.\n", encoding="utf-8")
    assert cli("add-src", str(note)).exit_code == 0
    uri = json.loads(cli("search", "kerosene", "--json").stdout)["hits"][0]["document_uri"]
    assert uri.startswith("file:///") and "%20" in uri  # as search prints it, pasted back
    again = json.loads(cli("add-src", uri, "--json").stdout)
    assert [o["status"] for o in again["outcomes"]] == ["unchanged"]
    note.write_text("# Notes\n\nLanterns burn whale oil.\n", encoding="utf-8")
    via_localhost = cli("add-src", uri.replace("file://", "file://localhost"), "--json")
    assert [o["status"] for o in json.loads(via_localhost.stdout)["outcomes"]] == ["updated"]
    listed = json.loads(cli("list", "--json").stdout)["documents"]
    assert [d["uri"] for d in listed] == [uri]


# s3:// is read as a source now (tests/ingest/test_objects.py); gs:// is not.
@pytest.mark.parametrize("address", ["ftp://example.com/notes.md", "gs://bucket/notes.md", "file://nas/x.md"])
def test_addresses_of_other_kinds_are_refused_by_name(cli, address: str) -> None:
    result = cli("add-src", address)
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.count("\n") == 1 and address in result.stderr
    assert "only local paths, http(s) and s3:// addresses" in result.stderr


def test_readd_unchanged_is_noop_and_changed_replaces(cli, docs: Path) -> None:
    cli("add-src", str(docs))
    again = cli("add-src", str(docs), "--json")
    assert {s["status"] for s in json.loads(again.stdout)["outcomes"]} == {"unchanged"}
    (docs / "search.txt").write_text("Hybrid search now uses a convex combination of scores.\n")
    changed = json.loads(cli("add-src", str(docs), "--json").stdout)
    statuses = {Path(s["source"]).name: s["status"] for s in changed["outcomes"]}
    assert statuses == {"config.md": "unchanged", "search.txt": "updated"}
    listed = json.loads(cli("list", "--json").stdout)
    assert len(listed["documents"]) == 2 and listed["truncated"] is False
    hit = json.loads(cli("search", "convex combination", "--json", "-n", "1").stdout)["hits"][0]
    assert "convex" in hit["content"]


def test_partial_failure_adds_the_rest_and_exits_partial(cli, tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text("# Good\n\nfine content here\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\x00\x01\x02\xff" * 50)
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    pdf = tmp_path / "broken.pdf"
    pdf.write_bytes(b"%PDF-1.4 this is not really a pdf")
    result = cli(
        "add-src", str(good), str(empty), str(binary), str(latin), str(pdf), str(tmp_path / "missing.md")
    )
    assert result.exit_code == ExitCode.PARTIAL
    errors = [line for line in result.stderr.splitlines() if line.startswith("haiku:")]
    assert len(errors) == 4 and "Traceback" not in result.stderr
    # A Latin-1 file is read, and the user is told how.
    assert f"note: {latin}: not UTF-8; read as Latin-1" in result.stderr
    listed = json.loads(cli("list", "--json").stdout)["documents"]
    assert [d["title"] for d in listed] == ["Good", "latin"]
    content = json.loads(cli("get", listed[1]["id"], "--json").stdout)["document"]["content"]
    assert content == "café crème"


def test_add_text_with_title_and_meta_then_get_and_delete(cli) -> None:
    added = cli("add", "Lanterns burn kerosene.", "--title", "Lamps", "--meta", "year=1901", "--json")
    assert added.exit_code == 0
    doc_id = json.loads(added.stdout)["outcomes"][0]["document_id"]
    got = json.loads(cli("get", doc_id, "--json").stdout)
    assert got["database"] == "default" and [c["text"] for c in got["chunks"]] == ["Lanterns burn kerosene."]
    assert (
        got["document"]["title"] == "Lamps"
        and got["document"]["metadata"] == {"year": "1901"}
        and got["document"]["content"] == "Lanterns burn kerosene."
    )
    assert "Lanterns burn kerosene." in cli("get", doc_id).stdout
    assert "Lanterns burn kerosene." in cli("get", f" {doc_id}\n").stdout  # pasted with what surrounds it
    note = cli("add", "A second short note.")
    assert note.stdout.startswith("added ") and note.stdout.rstrip().endswith("(1 chunk)")
    filtered = json.loads(cli("list", "--filter", "metadata LIKE '%1901%'", "--json").stdout)
    assert [d["id"] for d in filtered["documents"]] == [doc_id]
    assert cli("delete", doc_id).exit_code == 0
    missing = cli("get", doc_id)
    assert missing.exit_code == ExitCode.INPUT and doc_id in missing.stderr


def test_bad_meta_and_bad_filter_are_one_line_errors(cli) -> None:
    cli("add", "some text")
    bad_meta = cli("add", "x", "--meta", "novalue")
    assert bad_meta.exit_code == ExitCode.INPUT and "KEY=VALUE" in bad_meta.stderr
    bad_filter = cli("search", "text", "--filter", "title === 1")
    assert bad_filter.exit_code == ExitCode.INPUT
    assert bad_filter.stderr.count("\n") == 1 and "invalid filter" in bad_filter.stderr
    # What is wrong in the user's own filter, not in the SELECT haiku wrapped it in.
    unclosed = cli("list", "--filter", "(((")
    assert unclosed.exit_code == ExitCode.INPUT and "SELECT" not in unclosed.stderr
    assert unclosed.stderr == "haiku: invalid filter '(((': a '(' is not closed\n"
    cut_short = cli("list", "--filter", "(created_at IS NOT NULL")
    assert cut_short.stderr == "haiku: invalid filter '(created_at IS NOT NULL': a '(' is not closed\n"
    incomplete = cli("list", "--filter", "created_at IS NOT NULL AND")
    assert incomplete.stderr.endswith("expected an expression, found the end of the filter\n")
    bad_type = cli("search", "text", "--type", "magic")
    assert bad_type.exit_code == ExitCode.INPUT and "hybrid, vector or fts" in bad_type.stderr
    # A map's subscript on the metadata text: one line naming the filter and the form to write, not LanceDB's.
    for run in (
        cli("list", "--filter", "metadata['a'] = '1'"),
        cli("search", "text", "--filter", "metadata['a']"),
    ):
        assert run.exit_code == ExitCode.INPUT and "lance error" not in run.stderr
        assert run.stderr.count("\n") == 1 and "metadata[...] does not name a key" in run.stderr
        assert run.stderr.rstrip().endswith(
            "a metadata key is written metadata.KEY, e.g. metadata.a = 'draft'"
        )


def test_an_id_with_a_newline_is_echoed_escaped_on_one_line(cli) -> None:
    cli("add", "some text")
    for command in ("get", "delete"):
        result = cli(command, "ab\ncd")
        assert (result.exit_code, result.stderr.splitlines()[0]) == (
            ExitCode.INPUT,
            "haiku: no document with id, id prefix, uri or path 'ab\\ncd' in database 'default'; "
            "haiku list shows the ids",
        ), result.stderr


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("list", "--limit", "0"), "haiku: --limit must be at least 1\n"),
        (("list", "--offset", "-1"), "haiku: --offset must be 0 or more\n"),
        (("search", "text", "--limit", "0"), "haiku: --limit must be at least 1\n"),
        (
            ("search", "text", "--limit", "10001"),
            "haiku: --limit must be at most 10,000; to see every document, use haiku list\n",
        ),
    ],
)
def test_out_of_range_numbers_name_the_option(cli, args: tuple[str, ...], line: str) -> None:
    cli("add", "some text")
    result = cli(*args)
    assert result.exit_code == ExitCode.INPUT and result.stderr == line


def test_list_says_why_a_page_is_empty_and_how_to_see_the_next(cli) -> None:
    for n in range(3):
        cli("add", f"note {n}")
    page = cli("list", "--limit", "2")
    assert page.stdout.count("note ") == 2
    assert page.stderr == "(more documents follow; see them with --offset 2 --limit 2)\n"
    assert cli("list", "--offset", "2").stderr == ""  # the last page
    past = cli("list", "--offset", "5")
    assert (past.stdout, past.stderr) == ("", "no documents after the first 5\n")
    unmatched = cli("list", "--filter", "title = 'zz'")
    assert (unmatched.stdout, unmatched.stderr) == ("", "no documents match the filter\n")


def test_reading_before_any_write_is_a_clear_error(cli, isolated: Path) -> None:
    result = cli("search", "anything")
    assert result.exit_code == ExitCode.DATABASE
    assert "database 'default' does not exist yet" in result.stderr
    assert not (isolated / "data" / "default.lancedb").exists()


def test_several_configured_and_none_chosen_is_refused(cli, write_config, tmp_path: Path) -> None:
    write_config(f'[databases]\nnotes = "{tmp_path}/notes.lancedb"\npapers = "{tmp_path}/papers.lancedb"\n')
    result = cli("add", "hello")
    assert result.exit_code == ExitCode.INPUT
    assert "notes, papers" in result.stderr and "--database" in result.stderr
    assert cli("add", "hello", "-d", "notes").exit_code == 0
    assert not (tmp_path / "papers.lancedb").exists()
    unknown = cli("info", "-d", "nope")
    assert unknown.exit_code == ExitCode.INPUT and "configured databases: notes, papers" in unknown.stderr


def test_info_history_vacuum_rebuild(cli, tmp_path: Path) -> None:
    db = str(tmp_path / "work.lancedb")
    cli("add", "First note about owls.", "--db", db)
    cli("add", "Second note about herons.", "--db", db)
    info = json.loads(cli("info", "--db", db, "--json").stdout)
    assert info["database"] == "work" and info["documents"] == 2 and info["chunks"] == 2
    assert info["embedder"] == "haiku:all-minilm-l6-v2" and info["dimension"] == 384
    assert any(i["kind"] == "FTS" for i in info["indexes"])
    assert json.loads(cli("history", "--db", db, "--json").stdout)["versions"]
    assert cli("vacuum", "--db", db).exit_code == 0
    rebuilt = cli("rebuild", "--db", db)
    assert rebuilt.exit_code == 0 and "2 chunks, 2 kept their ids" in rebuilt.stdout
    as_json = json.loads(cli("rebuild", "--db", db, "--json").stdout)
    assert (as_json["chunks"], as_json["kept_chunk_ids"]) == (2, 2)
    hit = json.loads(cli("search", "herons", "--db", db, "--json", "-n", "1").stdout)["hits"][0]
    assert hit["database"] == "work" and "herons" in hit["content"]
    assert not info["read_only"] and "read-only" not in cli("info", "--db", db).stdout


def test_info_says_a_database_is_configured_read_only(cli, write_config, tmp_path: Path) -> None:
    cli("add", "A note about owls.", "--db", str(tmp_path / "notes.lancedb"))
    write_config(f'[databases]\nnotes = {{ uri = "{tmp_path / "notes.lancedb"}", read_only = true }}\n')
    assert json.loads(cli("info", "--json").stdout)["read_only"] is True
    assert "local, read-only" in cli("info").stdout


def test_search_from_file_json_lines(cli, tmp_path: Path) -> None:
    cli("add", "Owls hunt at night.")
    cli("add", "Herons wade in shallow water.")
    queries = tmp_path / "q.txt"
    queries.write_text('{"id": "q1", "query": "night hunting birds"}\nwading birds\n\n')
    result = cli("search", "--from", str(queries), "--json", "-n", "1")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(row["id"], row["query"]) for row in lines] == [
        ("q1", "night hunting birds"),
        ("2", "wading birds"),
    ]
    assert "Owls" in lines[0]["hits"][0]["content"] and "Herons" in lines[1]["hits"][0]["content"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"query": null}', "expected the query as text in quotes, got null"),  # never a search for "None"
        ('{"query": ["owls"]}', 'expected the query as text in quotes, got ["owls"]'),
        ('{"id": "q1"}', "expected JSON with a 'query' field"),
        ('{"query": "owls"', "not valid JSON ("),
        # Checked before any line is searched: no results for line 1, then an error without a line.
        ('{"query": " "}', "the query is empty"),
        pytest.param("x" * 10_001, "the query is 10,001 characters long; the most is 10,000", id="too-long"),
    ],
)
def test_a_json_query_line_that_is_not_one_names_the_line(
    cli, tmp_path: Path, line: str, expected: str
) -> None:
    cli("add", "Owls hunt at night.")
    queries = tmp_path / "q.txt"
    queries.write_text(f"owls\n{line}\n")
    result = cli("search", "--from", str(queries), "--json")
    assert result.exit_code == ExitCode.INPUT and result.stdout == ""
    assert result.stderr.startswith(f"haiku: {queries}:2: {expected}") and result.stderr.count("\n") == 1


def test_a_missing_config_named_by_haiku_config_fails_but_config_path_shows_it(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "typo.toml"
    monkeypatch.setenv("HAIKU_CONFIG", str(missing))
    listed = cli("list")
    assert listed.exit_code == ExitCode.INPUT and listed.stderr.count("\n") == 1
    assert f"config file {missing} (named by HAIKU_CONFIG) does not exist" in listed.stderr
    where = cli("config", "path")
    assert where.exit_code == 0 and where.stdout.strip() == str(missing)
    assert "named by HAIKU_CONFIG, other commands fail until it exists" in where.stderr
    as_json = json.loads(cli("config", "path", "--json").stdout)
    assert as_json == {"config_file": str(missing), "config_exists": False, "named_by": "HAIKU_CONFIG"}
    assert not (tmp_path / "data").exists()  # nothing was written to the default database


def test_config_path_in_an_existing_haiku_config_dir_says_the_defaults_apply(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cfg"
    folder.mkdir()
    monkeypatch.delenv("HAIKU_CONFIG")
    monkeypatch.setenv("HAIKU_CONFIG_DIR", str(folder))
    where = cli("config", "path")
    assert where.exit_code == 0 and where.stdout.strip() == str(folder / "config.toml")
    assert "defaults apply" in where.stderr and "fail" not in where.stderr
    assert cli("config", "show").exit_code == 0  # what the line promises
    folder.rmdir()
    assert "other commands fail until it exists" in cli("config", "path").stderr
    assert cli("config", "show").exit_code == ExitCode.INPUT


def test_config_path_show_and_databases(cli, write_config, tmp_path: Path) -> None:
    path = write_config(f'[databases]\nnotes = "{tmp_path}/notes.lancedb"\n')
    assert cli("config", "path").stdout.strip() == str(path)
    assert json.loads(cli("config", "path", "--json").stdout)["config_exists"] is True
    shown = json.loads(cli("config", "show", "--json").stdout)
    assert shown["settings"]["databases"]["notes"]["uri"] == f"{tmp_path}/notes.lancedb"
    assert shown["config_file"] == str(path) and shown["config_exists"] is True
    cli("add", "hello there")
    listed = json.loads(cli("databases", "--json").stdout)
    assert listed == [
        {
            "database": "notes",
            "kind": "local",
            "location": f"{tmp_path}/notes.lancedb",
            "read_only": False,
            "exists": True,
            "documents": 1,
            "chunks": 1,
            "embedder": "haiku:all-minilm-l6-v2",
            "published": None,
            "error": None,
        }
    ]
    assert f"{tmp_path}/notes.lancedb" not in cli("databases").stdout
    assert f"{tmp_path}/notes.lancedb" in cli("databases", "--show-locations").stdout


def test_unknown_config_key_is_reported(cli, write_config) -> None:
    write_config("[serch]\nlimit = 3\n")
    result = cli("search", "x")
    assert result.exit_code == ExitCode.INPUT and "unknown key 'serch'" in result.stderr


def test_a_string_where_the_config_wants_true_or_false_is_refused(cli, write_config) -> None:
    # `read_only = "yes"` used to be read as true: a user who quoted it gets told, not guessed for.
    path = write_config('[databases]\nnotes = { uri = "notes.lancedb", read_only = "yes" }\n')
    result = cli("databases")
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.strip() == (
        f"haiku: invalid value for '[databases.notes] read_only' in config file {path}: "
        'expected true or false, got "yes"'
    )


def test_help_everywhere(cli) -> None:
    for args in ([], ["search"], ["add-src"], ["config"], ["databases"]):
        result = cli(*args, "-h")
        assert result.exit_code == 0 and "Usage" in result.stdout


def test_nothing_readable_is_bad_input_not_partial(cli, tmp_path: Path) -> None:
    result = cli("add-src", str(tmp_path / "nope.md"))
    assert result.exit_code == ExitCode.INPUT
    assert "nope.md: no such file or directory" in result.stderr


def test_a_configured_database_not_written_yet_is_skipped_and_named(cli, write_config, tmp_path) -> None:
    write_config(f'[databases]\nnotes = "{tmp_path}/notes.lancedb"\npapers = "{tmp_path}/papers.lancedb"\n')
    assert cli("add", "Owls hunt at night.", "-d", "notes").exit_code == 0
    found = cli("search", "owls", "--json")
    assert found.exit_code == 0
    data = json.loads(found.stdout)
    assert data["databases"] == ["notes"] and data["not_created"] == ["papers"]
    assert [h["database"] for h in data["hits"]] == ["notes"]
    assert "'papers' is not created yet" in found.stderr
    assert not (tmp_path / "papers.lancedb").exists()
    many = cli("search", "--from", "-", "--json", input="owls\nnight\n")
    assert [json.loads(line)["not_created"] for line in many.stdout.splitlines()] == [["papers"]] * 2
    assert many.stderr.count("'papers' is not created yet") == 1  # said once, not once per query
    # Only missing ones left: the error names it, as before.
    alone = cli("search", "owls", "-d", "papers")
    assert alone.exit_code == ExitCode.DATABASE and "'papers' does not exist yet" in alone.stderr


def test_list_pages_and_says_when_it_stopped(cli) -> None:
    for text in ("one note", "two notes", "three notes"):
        cli("add", text)
    page = cli("list", "--limit", "2", "--json")
    data = json.loads(page.stdout)
    assert data["truncated"] is True and len(data["documents"]) == 2 and "--offset 2" in page.stderr
    rest = json.loads(cli("list", "--limit", "2", "--offset", "2", "--json").stdout)
    assert rest["truncated"] is False and len(rest["documents"]) == 1


def test_delete_json_names_what_went(cli) -> None:
    doc_id = json.loads(cli("add", "Short-lived.", "--json").stdout)["outcomes"][0]["document_id"]
    gone = json.loads(cli("delete", doc_id, "--json").stdout)
    assert gone["database"] == "default" and gone["document"]["id"] == doc_id and gone["chunks"] == 1


def test_config_show_prints_toml_that_loads_back(cli, write_config, tmp_path: Path) -> None:
    write_config(
        "[databases]\n"
        'notes = "rel/notes.lancedb"\n'
        'papers = { uri = "s3://lab/p.lancedb", read_only = true, '
        'storage_options = { region = "eu-west-1", aws_secret_access_key = "s3cr3t" } }\n'
        '[model]\nname = "openai:gpt-4o"\n[search]\nlimit = 7\n[mcp]\nhttp_token = "a-token-of-20-chars!"\n'
    )
    shown = cli("config", "show")
    assert shown.exit_code == 0 and "s3cr3t" not in shown.stdout and "a-token" not in shown.stdout
    # Secrets are named in comments, never printed as a placeholder that would load as their value.
    assert "# not shown (secrets): storage_options.aws_secret_access_key" in shown.stdout
    assert "# http_token is set but not shown (a secret)" in shown.stdout
    again = tmp_path / "again" / "config.toml"
    again.parent.mkdir()
    again.write_text(shown.stdout)
    from haiku_cli.config import load_settings

    original, _ = load_settings(tmp_path / "config.toml")
    reloaded, _ = load_settings(again)
    # Relative paths were resolved against the first file's folder, so the copy means the same databases.
    assert original.databases["notes"].uri == str(tmp_path / "rel" / "notes.lancedb")
    assert reloaded.databases["notes"] == original.databases["notes"]
    assert reloaded.databases["papers"].storage_options == {"region": "eu-west-1"}
    assert reloaded.model == original.model and reloaded.search.limit == 7
    assert reloaded.mcp.http_token is None


def test_relative_database_paths_mean_the_config_folder(cli, write_config, tmp_path, monkeypatch) -> None:
    write_config('[databases]\nnotes = "notes.lancedb"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert cli("add", "Relative paths resolve next to the config.").exit_code == 0
    assert (tmp_path / "notes.lancedb").is_dir() and not (elsewhere / "notes.lancedb").exists()


def test_an_empty_database_path_is_refused(cli, write_config, tmp_path: Path) -> None:
    empty = cli("add", "x", "--db", "")
    assert empty.exit_code == ExitCode.INPUT and "--db" in empty.stderr
    write_config('[databases]\nnotes = ""\n')
    configured = cli("search", "x")
    assert configured.exit_code == ExitCode.INPUT and "[databases.notes] uri" in configured.stderr


def test_a_database_path_that_is_a_file_says_so(cli, tmp_path: Path) -> None:
    plain = tmp_path / "notes.txt"
    plain.write_text("not a database")
    result = cli("add", "x", "--db", str(plain))
    assert result.exit_code == ExitCode.INPUT and "is a file, not a database folder" in result.stderr
    assert plain.read_text() == "not a database"


def test_readding_with_other_meta_or_title_updates_them(cli, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Tides\n\nThe moon raises two bulges.\n")
    first = json.loads(cli("add-src", str(note), "--meta", "topic=sea", "--json").stdout)["outcomes"][0]
    same = json.loads(cli("add-src", str(note), "--meta", "topic=sea", "--json").stdout)["outcomes"][0]
    assert same["status"] == "unchanged"
    retagged = json.loads(cli("add-src", str(note), "--meta", "topic=moon", "--json").stdout)
    assert retagged["outcomes"][0]["status"] == "updated"
    assert retagged["outcomes"][0]["document_id"] == first["document_id"]
    doc = json.loads(cli("get", first["document_id"], "--json").stdout)["document"]
    assert doc["metadata"] == {"topic": "moon"}
    # No --meta keeps what is stored; another --title is an update too.
    assert json.loads(cli("add-src", str(note), "--json").stdout)["outcomes"][0]["status"] == "unchanged"
    retitled = json.loads(cli("add-src", str(note), "--title", "Moon", "--json").stdout)["outcomes"][0]
    assert (retitled["status"], retitled["kept_chunk_ids"]) == ("updated", retitled["chunks"])
    assert first["kept_chunk_ids"] is None  # only an update keeps ids
    doc = json.loads(cli("get", first["document_id"], "--json").stdout)["document"]
    assert (doc["title"], doc["metadata"]) == ("Moon", {"topic": "moon"})
    assert "(1 chunk, 1 kept its id)" in cli("add-src", str(note), "--title", "Tides").stdout


def test_database_names_complete_from_the_config(write_config, tmp_path) -> None:
    from typer.testing import CliRunner

    from haiku_cli.cli.app import app

    write_config(
        f'[databases]\nnotes = "{tmp_path}/n.lancedb"\nnews = "{tmp_path}/w.lancedb"\npapers = "x"\n'
    )
    env = {"_HAIKU_COMPLETE": "complete_bash", "COMP_WORDS": "haiku search -d n", "COMP_CWORD": "3"}
    result = CliRunner().invoke(app, [], env=env, prog_name="haiku")
    assert sorted(result.stdout.split()) == ["news", "notes"]


@pytest.mark.parametrize(
    ("words", "expected"),
    [("haiku search --type ", ["fts", "hybrid", "vector"]), ("haiku add-src --engine r", ["ray"])],
)
def test_option_values_complete(words: str, expected: list[str]) -> None:
    from typer.testing import CliRunner

    from haiku_cli.cli.app import app

    env = {"_HAIKU_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()))}
    if not words.endswith(" "):
        env["COMP_CWORD"] = str(len(words.split()) - 1)
    result = CliRunner().invoke(app, [], env=env, prog_name="haiku")
    assert sorted(result.stdout.split()) == expected


def test_a_database_folder_of_other_files_is_refused(cli, write_config, tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "draft.md").write_text("# Draft\n")
    for command in (("add", "x"), ("add-src", str(folder / "draft.md"))):
        result = cli(*command, "--db", str(folder))
        assert result.exit_code == ExitCode.INPUT and result.stderr.count("\n") == 1
        assert str(folder) in result.stderr and "new or empty folder" in result.stderr
    write_config(f'[databases]\npapers = "{folder}"\n')
    configured = cli("add", "x")
    assert configured.exit_code == ExitCode.INPUT
    assert (
        "point [databases] papers in the config file at a haiku database or a new or empty folder"
        in configured.stderr
    )
    assert [p.name for p in folder.iterdir()] == ["draft.md"]


def test_reading_a_configured_folder_of_other_files_says_to_fix_the_config(
    cli, write_config, tmp_path: Path
) -> None:
    # "does not exist yet; add documents first" would send the user to an add that is refused.
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.md").write_text("# Todo\n")
    write_config(f'[databases]\nnotes = "{folder}"\nother = "{tmp_path}/other.lancedb"\n')
    cli("add", "some text", "--database", "other")
    fix = "point [databases] notes in the config file at a haiku database or a new or empty folder"
    for command in (("info", "-d", "notes"), ("list", "-d", "notes"), ("search", "text")):
        result = cli(*command)
        assert result.exit_code == ExitCode.INPUT and result.stderr.count("\n") == 1, result.stderr
        assert fix in result.stderr and "does not exist yet" not in result.stderr
    overview = json.loads(cli("databases", "--json").stdout)
    assert [(d["database"], fix in (d["error"] or "")) for d in overview] == [
        ("notes", True),
        ("other", False),
    ]


def test_databases_shows_a_configured_file_as_an_error_row(cli, write_config, tmp_path: Path) -> None:
    # list/search refuse it as a file; the overview must not call it merely "not created yet".
    (tmp_path / "notes.txt").write_text("mine")
    write_config(f'[databases]\nnotes = "{tmp_path}/notes.txt"\nother = "{tmp_path}/other.lancedb"\n')
    cli("add", "some text", "--database", "other")
    overview = json.loads(cli("databases", "--json").stdout)
    assert [(d["database"], d["exists"], d["error"]) for d in overview] == [
        ("notes", False, f"database 'notes' at {tmp_path}/notes.txt is a file, not a database folder"),
        ("other", True, None),
    ]


def test_a_data_dir_that_is_a_file_is_bad_input(cli, monkeypatch, tmp_path: Path) -> None:
    # "does not exist yet; add documents" would send the user to an add that fails with a raw OS error.
    (tmp_path / "data").write_text("not a folder")
    monkeypatch.setenv("HAIKU_DATA_DIR", str(tmp_path / "data"))
    for command in (("list",), ("search", "x"), ("add", "some text")):
        result = cli(*command)
        assert result.exit_code == ExitCode.INPUT and result.stderr.count("\n") == 1, result.stderr
        assert f"{tmp_path}/data is a file, not a folder" in result.stderr
    assert (tmp_path / "data").read_text() == "not a folder"


def test_the_not_written_yet_hint_names_the_database_to_add_to(cli, write_config, tmp_path: Path) -> None:
    write_config(f'[databases]\nnotes = "{tmp_path}/notes.lancedb"\npapers = "{tmp_path}/papers.lancedb"\n')
    by_name = cli("info", "--database", "papers")
    assert by_name.exit_code == ExitCode.DATABASE
    assert "(haiku add-src PATH --database papers)" in by_name.stderr
    by_path = cli("list", "--db", str(tmp_path / "other.lancedb"))
    assert f"(haiku add-src PATH --db {tmp_path / 'other.lancedb'})" in by_path.stderr
    both = cli("search", "anything")  # several databases failing at once: a line each, each with its hint
    assert both.stderr.splitlines() == [
        f"haiku: database '{name}' does not exist yet; add documents to it first "
        f"(haiku add-src PATH --database {name})"
        for name in ("notes", "papers")
    ]


def test_a_huge_configured_search_limit_is_a_config_error(cli, write_config) -> None:
    cli("add", "some text")
    write_config("[search]\nlimit = 1000000000\n")
    result = cli("search", "text")
    assert result.exit_code == ExitCode.INPUT and "[search] limit" in result.stderr
    assert "--limit" not in result.stderr


def test_get_or_delete_of_an_unknown_id_quotes_it_and_points_to_list(cli, tmp_path: Path) -> None:
    cli("add", "some text")
    for command in ("get", "delete"):
        result = cli(command, "")
        assert result.exit_code == ExitCode.INPUT
        said = "no document with id, id prefix, uri or path '' in database 'default'"
        assert f"{said}; haiku list shows the ids" in result.stderr
    db = str(tmp_path / "notes.lancedb")
    cli("add", "more text", "--db", db)
    assert f"haiku list --db {db} shows the ids" in cli("get", "nope", "--db", db).stderr


def test_databases_of_different_embedders_point_to_the_flags_that_chose_them(
    cli, write_config, tmp_path: Path
) -> None:
    notes, other = tmp_path / "notes.lancedb", tmp_path / "other.lancedb"
    cli("add", "spring tides", "--db", str(notes))
    single_chunk_database(other, ["spring tides"], [[1.0, 0.0, 0.0, 0.0]])
    mixed = (
        "these databases were written with different embedders: notes (haiku:all-minilm-l6-v2), other (t:e)"
    )
    by_path = cli("search", "tides", "--db", str(notes), "--db", str(other))
    assert by_path.exit_code == ExitCode.INPUT
    assert by_path.stderr.strip() == (
        f"haiku: {mixed}; search them together with --type fts, or narrow the selection with --db"
    )
    write_config(f'[databases]\nnotes = "{notes}"\nother = "{other}"\n')
    by_name = cli("search", "tides")
    assert by_name.stderr.strip().endswith("or narrow the selection with --database")
    assert cli("search", "tides", "--type", "fts").exit_code == 0


def test_what_a_folder_holds_and_is_not_read_is_counted_and_listed_with_verbose(cli, docs: Path) -> None:
    (docs / "fig.gif").write_bytes(b"GIF89a\x00\x00")
    (docs / "plot.gif").write_bytes(b"GIF89a\x00\x00")
    (docs / "notes.org").write_text("* Org heading\nOrg notes about lanterns.\n")
    (docs / ".gitignore").write_text("build/\n")
    (docs / "build").mkdir()
    (docs / "build" / "out.md").write_text("# Built\n")
    plain = cli("add-src", str(docs))
    assert plain.exit_code == 0
    summary = plain.stderr.strip().splitlines()[-1]
    assert summary == (
        f"default: 2 added; left out: 3 unsupported (.gif 2, .org 1), 1 ignored (by {docs / '.gitignore'}); "
        "--verbose lists them"
    )
    verbose = cli("add-src", str(docs), "--verbose", "--include", "*.org", "--exclude", "guide/")
    assert f"left out: {docs / 'fig.gif'} (excluded: --include)" in verbose.stderr
    assert f"left out: {docs / 'build'} (ignored: {docs / '.gitignore'}: build/)" in verbose.stderr
    assert f"left out: {docs / 'guide'} (excluded: --exclude guide/)" in verbose.stderr
    assert f"added     {docs / 'notes.org'}" in verbose.stdout  # read as plain text, as asked
    found = json.loads(cli("search", "lanterns", "--json").stdout)["hits"]
    assert found and found[0]["document_uri"].endswith("notes.org")


def test_re_adding_a_folder_says_which_stored_files_left_it(cli, docs: Path) -> None:
    assert cli("add-src", str(docs)).exit_code == 0
    (docs / "search.txt").unlink()
    again = cli("add-src", str(docs), "--verbose")
    assert again.exit_code == 0
    assert again.stderr.strip().splitlines()[-1] == (
        "default: 1 unchanged; 1 no longer in the folder: kept; use sync"
    )
    assert f"no longer in the folder: {docs / 'search.txt'} (still stored)" in again.stderr
    as_json = json.loads(cli("add-src", str(docs), "--json").stdout)
    assert as_json["gone"] == [str(docs / "search.txt")]


def test_a_folder_a_parent_gitignore_ignores_names_the_ignore_file(cli, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("data/\n")
    (repo / "data").mkdir()
    (repo / "data" / "a.md").write_text("# A\n\ntext\n")
    result = cli("add-src", str(repo / "data"))
    assert result.stderr.strip().splitlines()[-1] == (
        f"default: nothing to add; left out: 1 ignored (by {repo / '.gitignore'}); --verbose lists them"
    )
