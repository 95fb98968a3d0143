"""Every --json is the model_dump of the library's result model: same keys, and it validates back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from haiku_cli import api

DOCS = Path(__file__).resolve().parents[2] / "docs" / "json.md"


def _matches(data: dict, model: type[BaseModel]) -> None:
    assert set(data) == set(model.model_json_schema(mode="serialization")["properties"])
    assert model.model_validate(data).model_dump(mode="json") == data


@pytest.fixture
def db(cli, tmp_path: Path) -> str:
    path = str(tmp_path / "birds.lancedb")
    for text in ("Owls hunt voles at night.", "Herons wade in shallow water."):
        assert cli("add", text, "--db", path).exit_code == 0
    return path


def test_every_reading_command_prints_its_model(cli, db: str, tmp_path: Path) -> None:
    def run(*args: str) -> dict:
        result = cli(*args, "--db", db, "--json")
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    found = run("search", "owls")
    _matches(found, api.SearchResults)
    _matches(found["hits"][0], api.SearchHit)
    page = run("list")
    _matches(page, api.DocumentList)
    _matches(page["documents"][0], api.DocumentSummary)
    doc_id = page["documents"][0]["id"]
    got = run("get", doc_id)
    _matches(got, api.DocumentWithChunks)
    _matches(got["document"], api.DocumentRecord)
    _matches(got["chunks"][0], api.ChunkRecord)
    _matches(run("info"), api.DatabaseInfo)
    versions = run("history")
    _matches(versions, api.DatabaseHistory)
    _matches(versions["versions"][0], api.TableVersion)
    added = run("add", "Swifts sleep on the wing.")
    _matches(added, api.IngestReport)
    _matches(added["outcomes"][0], api.SourceOutcome)
    _matches(run("delete", added["outcomes"][0]["document_id"]), api.DeletedDocument)
    _matches(run("vacuum"), api.VacuumReport)
    queries = tmp_path / "q.txt"
    queries.write_text("owls\nherons\n")
    lines = cli("search", "--from", str(queries), "--db", db, "--json").stdout.splitlines()
    for line in lines:
        _matches(json.loads(line), api.SearchResults)


def test_timestamps_are_utc_iso8601(cli, db: str) -> None:
    page = json.loads(cli("list", "--db", db, "--json").stdout)
    versions = json.loads(cli("history", "--db", db, "--json").stdout)["versions"]
    for stamp in [page["documents"][0]["created_at"], versions[0]["timestamp"]]:
        assert stamp.endswith("Z") or stamp.endswith("+00:00")


def test_configuration_commands_print_their_models(cli, write_config, tmp_path: Path) -> None:
    write_config(f'[databases]\nnotes = "{tmp_path}/notes.lancedb"\n')
    cli("add", "hello")
    _matches(json.loads(cli("config", "show", "--json").stdout), api.ResolvedConfig)
    (row,) = json.loads(cli("databases", "--json").stdout)
    _matches(row, api.DatabaseOverview)
    assert set(json.loads(cli("databases", "--json", "--show-locations").stdout)[0]) == set(row)


def test_docs_name_every_field_of_every_result_model() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for name in [
        "SearchResults",
        "SearchHit",
        "DocumentList",
        "DocumentSummary",
        "DocumentRecord",
        "ChunkRecord",
        "DocumentWithChunks",
        "DeletedDocument",
        "IngestReport",
        "SourceOutcome",
        "DatabaseInfo",
        "DatabaseHistory",
        "TableVersion",
        "VacuumReport",
        "RebuildReport",
        "DatabaseOverview",
        "PublishReport",
        "PublishInfo",
        "ResolvedConfig",
        "AskResult",
        "AnalyzeResult",
        "Citation",
        "Execution",
        "SessionAnswer",
        "SessionList",
        "SessionSummary",
    ]:
        model = getattr(api, name)
        assert f"`{name}`" in text, name
        for field in model.model_json_schema(mode="serialization")["properties"]:
            assert f"`{field}`" in text, f"{name}.{field}"
