"""`haiku doctor`: each broken state built for real through LanceDB, found, named with its fix, mended."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict
from pathlib import Path

import lancedb
import pytest

from haiku_cli.errors import ExitCode
from haiku_cli.store import schema
from haiku_cli.store.sizes import human_size
from haiku_cli.store.writer_lock import LEASE_KEY, Owner


def _doctor(cli, *args: str) -> tuple[int, dict[str, dict]]:
    result = cli("doctor", "--json", *args)
    assert result.stdout, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] == (result.exit_code == 0), result.stderr
    (health,) = report["databases"]
    return result.exit_code, {c["check"]: c for c in health["checks"]}


def _tables(tmp_path: Path):
    return lancedb.connect(str(tmp_path / "data" / "default.lancedb"))


def _ids(cli) -> dict[str, str]:
    return {d["title"]: d["id"] for d in json.loads(cli("list", "--json").stdout)["documents"]}


def test_a_healthy_database_passes_every_check(cli) -> None:
    cli("add", "Kestrels hover over fields.", "--title", "Kestrels")
    code, checks = _doctor(cli)
    assert code == 0
    assert {c["status"] for c in checks.values()} == {"ok"}
    assert set(checks) >= {
        "reachable", "schema", "embedder", "indexes", "documents_without_chunks", "chunks_without_documents",
        "duplicate_documents", "unfinished_write", "versions", "sources", "pictures",
    }  # fmt: skip
    text = cli("doctor")
    assert text.exit_code == 0 and "default: ok" in text.stdout
    # The size as `info` shows it (e.g. "3.6 MB"), not a raw count of bytes.
    info = json.loads(cli("info", "--json").stdout)
    assert checks["versions"]["detail"].endswith(f", {human_size(info['size_bytes'])} on disk")
    assert "bytes" not in checks["versions"]["detail"]


def test_stray_rows_and_duplicates_are_found_and_the_safe_ones_mended(cli, tmp_path: Path) -> None:
    note = tmp_path / "tides.md"
    note.write_text("# Tides\n\nSpring tides follow the moon.\n", encoding="utf-8")
    cli("add", "Kestrels hover over fields.", "--title", "Kestrels")
    cli("add", "Otters swim in cold rivers.", "--title", "Otters")
    cli("add-src", str(note))
    ids = _ids(cli)
    conn = _tables(tmp_path)
    # A document whose chunks are gone, and chunks whose document is gone.
    conn.open_table("chunks").delete(f"document_id = '{ids['Kestrels']}'")
    conn.open_table("documents").delete(f"id = '{ids['Otters']}'")
    # The same file stored twice (same uri, same content), as an older haiku could leave it.
    documents = conn.open_table("documents")
    copy = documents.search().where(f"id = '{ids['Tides']}'").to_arrow().to_pylist()[0]
    copy["id"] = str(uuid.uuid4())
    documents.add([copy])
    # A picture row without its bytes.
    pictures = conn.create_table("pictures", schema=schema.pictures_schema())
    pictures.add(
        [{"document_id": ids["Tides"], "reference": "1", "format": "png", "size": None, "data": None}]
    )

    code, checks = _doctor(cli)
    assert code == ExitCode.INPUT
    failed = {name for name, c in checks.items() if c["status"] == "fail"}
    assert failed == {
        "documents_without_chunks",
        "chunks_without_documents",
        "duplicate_documents",
        "pictures",
    }
    assert ids["Kestrels"] in checks["documents_without_chunks"]["detail"]
    assert "haiku rebuild" in checks["documents_without_chunks"]["fix"]
    assert not checks["documents_without_chunks"]["safe_fix"]
    assert ids["Otters"] in checks["chunks_without_documents"]["detail"]
    assert "without bytes" in checks["pictures"]["detail"]
    # Search still returns the stray chunks, as the check says.
    assert "Otters" in cli("search", "otters rivers").stdout

    code, checks = _doctor(cli, "--fix")
    assert code == ExitCode.INPUT  # what only a rebuild or a delete mends is left to the user
    assert {n for n, c in checks.items() if c["status"] == "fail"} == {"documents_without_chunks"}
    assert all(checks[n]["fixed"] for n in ("chunks_without_documents", "duplicate_documents", "pictures"))
    assert "Otters" not in cli("search", "otters rivers").stdout
    assert sorted(d["title"] for d in json.loads(cli("list", "--json").stdout)["documents"]) == [
        "Kestrels",
        "Tides",
    ]
    assert _tables(tmp_path).open_table("pictures").count_rows() == 0
    assert "doctor --fix" in cli("history").stdout


def test_a_dead_write_a_new_row_unindexed_and_piled_versions_are_mended(cli, tmp_path: Path) -> None:
    cli("add", "Kestrels hover over fields.", "--title", "Kestrels")
    conn = _tables(tmp_path)
    chunks, meta = conn.open_table("chunks"), conn.open_table("meta")
    # A chunk row written past the indexes, as a write whose upkeep failed leaves it.
    row = chunks.search().limit(1).to_arrow().to_pylist()[0]
    chunks.add([{**row, "id": str(uuid.uuid4())}])
    # Versions piling up (a burst of small writes, cleaned an hour later), then a write that died
    # after its journal: the journal names the versions before it.
    for n in range(24):
        meta.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(
            [{"key": "scratch", "value": str(n)}]
        )
    before = {"documents": conn.open_table("documents").version, "chunks": chunks.version}
    meta.add([{"key": "pending_write", "value": json.dumps(before)}])
    code, checks = _doctor(cli)
    assert code == ExitCode.INPUT
    assert checks["unfinished_write"]["status"] == "fail" and "died" in checks["unfinished_write"]["detail"]
    assert checks["indexes"]["status"] == "warn" and "not yet indexed" in checks["indexes"]["detail"]
    assert checks["versions"]["status"] == "warn" and "meta" in checks["versions"]["detail"]
    code, checks = _doctor(cli, "--fix")
    assert code == 0
    assert {n for n, c in checks.items() if c["fixed"]} == {"unfinished_write", "indexes", "versions"}
    assert "pending_write" not in {r["key"] for r in conn.open_table("meta").to_arrow().to_pylist()}


def test_another_embedder_and_a_vanished_source_name_their_commands(cli, tmp_path: Path) -> None:
    note = tmp_path / "tides.md"
    note.write_text("# Tides\n\nSpring tides follow the moon.\n", encoding="utf-8")
    cli("add-src", str(note))
    note.unlink()
    meta = _tables(tmp_path).open_table("meta")
    meta.update(where="key = 'embedder_name'", values={"value": "openai:text-embedding-3-small"})
    code, checks = _doctor(cli, "--fix")
    assert code == ExitCode.INPUT
    assert checks["embedder"]["status"] == "fail" and "haiku rebuild" in checks["embedder"]["fix"]
    assert checks["sources"]["status"] == "fail" and str(note) in checks["sources"]["detail"]
    assert "haiku forget-src" in checks["sources"]["fix"] and not checks["sources"]["fixed"]
    text = cli("doctor")
    assert "problems found" in text.stdout and "FAIL" in text.stdout


def test_object_storage_lapsed_lease_and_an_unreachable_store(
    cli, write_config, s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", "3")  # the unreachable one is named within it
    write_config(
        f"""
[databases.papers]
uri = "s3://lab/doctor-{tmp_path.name}.lancedb"
storage_options = {{ endpoint = "{s3_server}", allow_http = true, region = "us-east-1" }}
[databases.gone]
uri = "s3://lab/gone.lancedb"
storage_options = {{ endpoint = "http://127.0.0.1:9", allow_http = true, region = "us-east-1" }}
"""
    )
    cli("add", "Peregrine falcons stoop onto prey.", "-d", "papers")
    opts = {"endpoint": s3_server, "allow_http": "true", "region": "us-east-1"}
    meta = lancedb.connect(f"s3://lab/doctor-{tmp_path.name}.lancedb", storage_options=opts).open_table(
        "meta"
    )
    dead = time.time() - 3600
    owner = asdict(Owner("x", 1, "h", "haiku add", dead, dead))  # stored as a writer stores its lease
    # A writer that died holding its lease: its record stays, its heartbeat an hour old.
    meta.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(
        [{"key": LEASE_KEY, "value": json.dumps(owner)}]
    )
    code, checks = _doctor(cli, "-d", "papers")
    assert code == ExitCode.INPUT and checks["unfinished_write"]["status"] == "fail"
    assert "lapsed" in checks["unfinished_write"]["detail"]
    code, checks = _doctor(cli, "-d", "papers", "--fix")
    assert code == 0 and checks["unfinished_write"]["fixed"]
    assert checks["reachable"]["detail"] == "object store answered"
    code, checks = _doctor(cli, "-d", "gone")
    assert code == ExitCode.INPUT and checks["reachable"]["status"] == "fail"
    assert "gone" in checks["reachable"]["detail"] and "endpoint" in checks["reachable"]["fix"]


def test_a_database_not_written_yet_warns_and_a_missing_path_is_the_error_info_gives(
    cli, write_config, tmp_path: Path
) -> None:
    write_config(f'[databases]\nnotes = "{tmp_path}/notes.lancedb"\n')
    code, checks = _doctor(cli)
    assert code == 0 and checks["reachable"]["status"] == "warn"
    assert checks["reachable"]["fix"] == "haiku add-src PATH --database notes"
    missing = str(tmp_path / "typo.lancedb")
    info = cli("info", "--db", missing)
    doctor = cli("doctor", "--db", missing)
    assert doctor.exit_code == info.exit_code == ExitCode.DATABASE and doctor.stdout == ""
    assert doctor.stderr == info.stderr and "does not exist yet" in doctor.stderr
    assert not Path(missing).exists()  # nothing was created by looking
