"""Scanned pages and image files read by OCR, as a user meets them: searched, cited, shown and drawn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haiku_cli.config.settings import IngestSettings
from haiku_cli.errors import ExitCode
from haiku_cli.ingest.convert.ocr import MISSING
from haiku_cli.ingest.engine import read_showing_steps
from haiku_cli.ingest.kinds.base import Reading
from tests.support.scans import scanned_pdf, words_png

PAGES = [["Quarterly harbour report"], ["Lantern maintenance schedule"]]


@pytest.fixture
def scan(cli, tmp_path: Path) -> Path:
    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned_pdf(PAGES))
    added = cli("add-src", str(path), "--json")
    assert added.exit_code == 0, added.stderr
    assert json.loads(added.stdout)["outcomes"][0]["status"] == "added"
    return path


def test_a_scanned_pages_words_are_found_cited_with_their_page_and_shown(cli, scan: Path, tmp_path) -> None:
    hits = json.loads(cli("search", "lantern maintenance", "--type", "fts", "--json").stdout)["hits"]
    assert hits and hits[0]["document_title"] == "Quarterly harbour report"  # its first line read
    hit = hits[0]
    assert hit["pages"] == [1, 2]  # the two short pages make one chunk
    assert "p. 1,2" in cli("search", "lantern maintenance", "--type", "fts").stdout
    lines = cli("get", str(scan), "--lines", "3:3")
    assert lines.exit_code == 0, lines.stderr
    assert lines.stdout.startswith("Quarterly harbour report\n")
    shown = cli("get", "--chunk", hit["chunk_id"])
    assert shown.exit_code == 0, shown.stderr
    assert "Lantern maintenance" in shown.stdout
    drawn = cli("visualize", hit["chunk_id"], "--out", str(tmp_path / "drawn"), "--json")
    assert drawn.exit_code == 0, drawn.stderr
    pages = json.loads(drawn.stdout)["pages"]
    assert [p["page"] for p in pages] == [1, 2]
    # No text layer to find the chunk's lines in: OCR finds them on the drawn page, highlighted.
    assert [p["lines_found"] for p in pages] == [1, 1]


def test_an_image_file_is_added_searched_and_keeps_its_picture(cli, tmp_path: Path) -> None:
    path = tmp_path / "whiteboard.png"
    path.write_bytes(words_png(["Retrospective actions", "rotate the pager weekly"]))
    added = cli("add-src", str(tmp_path), "--json")
    assert added.exit_code == 0, added.stderr
    document_id = json.loads(added.stdout)["outcomes"][0]["document_id"]
    hits = json.loads(cli("search", "pager weekly", "--type", "fts", "--json").stdout)["hits"]
    assert [h["document_title"] for h in hits] == ["whiteboard"]
    listed = json.loads(cli("get", document_id, "--json").stdout)["pictures"]
    assert [(p["reference"], p["width"]) for p in listed] == [("image", 900)]


def test_progress_names_each_page_read_by_ocr(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned_pdf(PAGES))
    steps: list[str] = []
    read_showing_steps(path, Reading(IngestSettings()), None, steps.append)
    assert steps == ["OCR page 1/2", "OCR page 2/2"]


def test_without_the_extra_an_add_names_it_once(cli, tmp_path: Path, monkeypatch) -> None:
    import haiku_cli.ingest.convert.pdf_scans as pdf_scans

    monkeypatch.setattr(pdf_scans, "ocr_available", lambda: False)  # as where the extra is not installed
    for name in ("one.pdf", "two.pdf"):
        (tmp_path / name).write_bytes(scanned_pdf(PAGES))
    added = cli("add-src", str(tmp_path))
    assert added.exit_code == 0, added.stderr
    assert added.stderr.count(MISSING) == 1
    assert added.stderr.count("pages 1-2 without a text layer kept as pictures only") == 2
    assert "pip install 'haiku-cli[ocr]'" in MISSING


def test_a_bad_ocr_mode_in_the_environment_is_one_line(cli, monkeypatch) -> None:
    monkeypatch.setenv("HAIKU_OCR", "sometimes")
    done = cli("add", "A note.")
    assert done.exit_code == ExitCode.INPUT
    assert "HAIKU_OCR must be one of auto, off, always" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
