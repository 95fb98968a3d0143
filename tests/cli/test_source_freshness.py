"""Hits, documents and citations say whether their source changed since it was indexed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio

from haiku_cli.capabilities.citations import Citation, resolve_citations
from haiku_cli.capabilities.context import format_results
from haiku_cli.databases import operations
from haiku_cli.databases.freshness import REMOTE
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Location
from tests.capabilities.script import cite_first, search, text
from tests.cli.scripted_model import MODEL, scripted

__all__ = ["scripted"]  # the fixture


def _corpus(folder: Path) -> dict[str, Path]:
    folder.mkdir()
    files = {name: folder / f"{name}.txt" for name in ("edited", "deleted", "touched", "replaced", "kept")}
    for name, path in files.items():
        path.write_text(f"The {name} note speaks of herons wading at dawn.\n", encoding="utf-8")
    return files


def _states(cli, *args: str) -> dict[str, tuple[str, str | None]]:
    found = json.loads(cli("search", "herons wading", "-n", "10", "--json", *args).stdout)["hits"]
    return {Path(h["document_uri"]).stem: (h["source_state"], h["source_note"]) for h in found}


def test_each_hit_says_whether_its_file_changed_vanished_or_is_as_stored(cli, tmp_path: Path) -> None:
    files = _corpus(tmp_path / "notes")
    assert cli("add-src", str(tmp_path / "notes")).exit_code == 0
    assert {s for s, _ in _states(cli).values()} == {"fresh"}
    files["edited"].write_text("The edited note now speaks of owls.\n", encoding="utf-8")
    files["deleted"].unlink()
    stat = files["touched"].stat()
    os.utime(files["touched"], ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # same bytes
    files["replaced"].unlink()
    files["replaced"].mkdir()
    states = _states(cli)
    assert states["edited"] == ("changed", None)
    assert states["deleted"] == ("missing", "the file is gone")
    assert states["touched"] == ("fresh", None)  # its time moved, its content did not
    assert states["replaced"] == ("missing", "now a directory")
    assert states["kept"] == ("fresh", None)
    text = cli("search", "herons wading", "-n", "10").stdout
    assert text.count("run `haiku sync -d default`") == 3
    assert "source changed since it was indexed" in text and "was deleted or moved" in text
    files_view = cli("search", "herons wading", "-n", "10", "--files").stdout
    assert "[changed]" in files_view and files_view.count("[missing]") == 2
    assert cli("sync").exit_code == 0
    assert {s for s, _ in _states(cli).values()} == {"fresh"}  # what sync left is fresh again


def test_text_added_without_a_source_is_unknown_with_the_reason(cli) -> None:
    assert cli("add", "Herons wading at dawn.").exit_code == 0
    (hit,) = json.loads(cli("search", "herons wading", "--json").stdout)["hits"]
    assert hit["source_state"] == "unknown" and "add-src" in hit["source_note"]
    assert "haiku sync" not in cli("search", "herons wading").stdout


def test_get_json_says_the_state_of_its_source(cli, tmp_path: Path) -> None:
    path = tmp_path / "heron.txt"
    path.write_text("Herons wade at dawn.\n", encoding="utf-8")
    assert cli("add-src", str(path)).exit_code == 0
    assert json.loads(cli("get", str(path), "--json").stdout)["source_state"] == "fresh"
    path.write_text("Herons wade at dusk now.\n", encoding="utf-8")
    assert json.loads(cli("get", str(path), "--json").stdout)["source_state"] == "changed"


def test_citations_and_the_models_results_carry_a_changed_source(workspace, tmp_path: Path) -> None:
    path = tmp_path / "heron.txt"
    path.write_text("Herons wade at dawn in the shallows.\n", encoding="utf-8")
    ws = workspace()
    location = Location("notes", str(tmp_path / "notes.lancedb"))
    selection = Selection((location,))

    async def go() -> tuple[list[Citation], str]:
        await operations.add_sources(ws, location, [str(path)], title=None, metadata={})
        path.write_text("Herons left the shallows.\n", encoding="utf-8")
        hits = await operations.search_hits(ws, selection, "herons", search_type="fts")
        shown = format_results("herons", hits, {}, show_database=False, units_left=3, context_chars=0)
        found = await resolve_citations(ws.pool, selection, [h.chunk_id for h in hits])
        return [Citation.from_resolved(1, f) for f in found.found.values()], shown

    (cited,), shown = anyio.run(go)
    assert "[stale: the source changed since this text was indexed" in shown
    assert cited.source_state == "changed" and "haiku sync -d notes" in (cited.stale_note or "")


def test_get_lines_says_it_prints_the_stored_text_and_warns_when_the_file_differs(
    cli, tmp_path: Path
) -> None:
    path = tmp_path / "birds.txt"
    path.write_text("Herons wade.\nOwls hunt.\nSwifts sleep aloft.\n", encoding="utf-8")
    assert cli("add-src", str(path)).exit_code == 0
    same = cli("get", str(path), "--lines", "2:2")
    assert same.stdout.strip() == "Owls hunt." and "the stored text (as indexed)" in same.stderr
    assert "haiku sync" not in same.stderr
    path.write_text("Herons wade.\nOwls sleep by day.\nSwifts sleep aloft.\n", encoding="utf-8")
    moved = cli("get", str(path), "--lines", "2:2")
    assert moved.stdout.strip() == "Owls hunt."  # what search and ask cited
    assert "lines here now differ: run `haiku sync -d default`" in moved.stderr
    part = json.loads(cli("get", str(path), "--lines", "1:1", "--json").stdout)
    assert part["text_of"] == "stored" and part["source_state"] == "changed" and part["differs"] is False


def test_a_long_lived_workspace_never_keeps_an_answer_past_the_files_change(
    workspace, tmp_path: Path
) -> None:
    # As `haiku daemon`, `mcp` and `serve` hold one: each search looks at the file again.
    path = tmp_path / "heron.txt"
    path.write_text("Herons wade at dawn.\n", encoding="utf-8")
    ws = workspace()
    location = Location("notes", str(tmp_path / "notes.lancedb"))
    selection = Selection((location,))

    async def state() -> str:
        (hit,) = await operations.search_hits(ws, selection, "herons", search_type="fts")
        return hit.source_state

    async def go() -> list[str]:
        await operations.add_sources(ws, location, [str(path)], title=None, metadata={})
        seen = [await state()]
        path.write_text("Herons wade at dusk.\n", encoding="utf-8")
        seen.append(await state())
        await operations.sync(ws, [location])
        seen.append(await state())
        path.unlink()
        seen.append(await state())
        return seen

    assert anyio.run(go) == ["fresh", "changed", "fresh", "missing"]


def test_doctor_and_sources_count_what_changed_or_vanished(cli, tmp_path: Path) -> None:
    files = _corpus(tmp_path / "notes")
    assert cli("add-src", str(tmp_path / "notes")).exit_code == 0
    files["edited"].write_text("The edited note now speaks of owls.\n", encoding="utf-8")
    files["deleted"].unlink()
    stat = files["touched"].stat()
    os.utime(files["touched"], ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    (listed,) = json.loads(cli("sources", "--json").stdout)["sources"]
    assert (listed["documents"], listed["changed"], listed["missing"]) == (5, 1, 1)
    assert "haiku sync -d default" in cli("sources").stderr
    checks = json.loads(cli("doctor", "--json").stdout)
    (stale,) = [c for db in checks["databases"] for c in db["checks"] if c["check"] == "stale_sources"]
    assert stale["status"] == "warn" and stale["fix"].startswith("haiku sync")
    assert stale["detail"].startswith("1 document(s) whose source changed, 1 whose source is gone")
    assert cli("sync").exit_code == 0
    (listed,) = json.loads(cli("sources", "--json").stdout)["sources"]
    assert (listed["changed"], listed["missing"]) == (0, 0)


def test_search_sync_first_syncs_changed_sources_and_leaves_read_only_databases(
    cli, write_config, tmp_path: Path
) -> None:
    one, ro = tmp_path / "one.lancedb", tmp_path / "ro.lancedb"
    write_config(f'[databases]\none = "{one}"\nro = "{ro}"\n')
    kept, shared = tmp_path / "kept.txt", tmp_path / "shared.txt"
    kept.write_text("Herons wade at dawn.\n", encoding="utf-8")
    shared.write_text("Herons nest in reeds.\n", encoding="utf-8")
    assert cli("add-src", str(kept), "-d", "one").exit_code == 0
    assert cli("add-src", str(shared), "-d", "ro").exit_code == 0
    write_config(f'[databases]\none = "{one}"\nro = {{ uri = "{ro}", read_only = true }}\n')
    kept.write_text("Herons wade at dusk now.\n", encoding="utf-8")
    shared.write_text("Herons left the reeds.\n", encoding="utf-8")
    done = cli("search", "herons", "--sync", "--json")
    assert done.exit_code == 0, done.stderr
    assert f"synced {kept} [one]: 1 updated" in done.stderr
    assert "ro is read_only: searched as it is, not synced" in done.stderr
    found = json.loads(done.stdout)
    assert sorted(found["notes"]) == [
        "ro is read_only: searched as it is, not synced",
        f"synced {kept} [one]: 1 updated",
    ]
    hits = {h["database"]: h for h in found["hits"]}
    assert hits["one"]["source_state"] == "fresh" and "dusk" in hits["one"]["content"]
    assert hits["ro"]["source_state"] == "changed" and "reeds" in hits["ro"]["content"]
    again = cli("search", "herons", "--sync", "-d", "one")
    assert again.exit_code == 0 and "synced" not in again.stderr  # nothing changed since: nothing synced
    refused = cli("search", "herons", "--sync", "--at", "v1")
    assert refused.exit_code != 0 and "--sync" in refused.stderr


def test_check_remote_asks_a_page_with_its_stored_etag(cli) -> None:
    from tests.support.etag_server import serve_page

    with serve_page(b"<html><body><p>Herons wade at dawn.</p></body></html>") as page:
        assert cli("add-src", page.url).exit_code == 0

        def state(*extra: str) -> tuple[str, str | None]:
            (hit,) = json.loads(cli("search", "herons", "--json", *extra).stdout)["hits"]
            return hit["source_state"], hit["source_note"]

        assert state() == ("unknown", "a URL or object: not checked (--check-remote asks)")
        assert state("--check-remote") == ("fresh", None) and page.statuses[-1] == 304
        page.body = b"<html><body><p>Herons left.</p></body></html>"
        assert state("--check-remote") == ("changed", None)
        got = json.loads(cli("get", page.url, "--json", "--check-remote").stdout)
        assert got["source_state"] == "changed"
    gone = json.loads(cli("search", "herons", "--json", "--check-remote").stdout)["hits"][0]
    assert gone["source_state"] == "unknown" and "could not be asked" in gone["source_note"]


def test_ask_check_remote_asks_the_pages_its_citations_came_from(cli, scripted) -> None:
    from tests.support.etag_server import serve_page

    steps = (search("herons"), cite_first(), text("Herons wade at dawn [1]."))
    with serve_page(b"<html><body><p>Herons wade at dawn.</p></body></html>") as page:
        assert cli("add-src", page.url).exit_code == 0
        page.body = b"<html><body><p>Herons left.</p></body></html>"  # changed since it was indexed

        def cited(*extra: str) -> dict:
            scripted(*steps)
            done = cli("ask", "When do herons wade?", *MODEL, "--json", *extra)
            assert done.exit_code == 0, done.stderr
            (citation,) = json.loads(done.stdout)["citations"]
            return citation

        unasked = cited()
        assert (unasked["source_state"], unasked["source_note"]) == ("unknown", REMOTE)
        asked_before = len(page.statuses)
        assert cited("--check-remote")["source_state"] == "changed"
        assert page.statuses[asked_before:].count(200) >= 2  # the search's hit and the citation, each asked
        scripted(*steps)
        shown = cli("ask", "When do herons wade?", *MODEL, "--check-remote")
        assert "haiku sync -d default" in shown.stdout + shown.stderr
