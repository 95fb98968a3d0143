"""Hostile sources for add-src: odd files are reported and skipped, the rest added; symlinks stay inside."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from haiku_cli.errors import ExitCode
from tests.ingest.bombs import docx_bomb
from tests.ingest.test_source_walk import deep_tree


def _outcomes(stdout: str) -> dict[str, dict]:
    return {Path(o["source"]).name: o for o in json.loads(stdout)["outcomes"]}


def _titles(cli, db: str) -> list[str]:
    listed = cli("list", "--db", db, "--json")
    return sorted(d["title"] for d in json.loads(listed.stdout)["documents"])


def test_odd_files_are_reported_and_the_rest_is_added(cli, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "herons.md").write_text("# Herons\n\nHerons nest in colonies by the water.\n")
    (src / "zebras.txt").write_text("Zebras graze on the open plain.\n")
    Path(os.fsdecode(os.fsencode(src) + b"/owls-\xff.md")).write_bytes(b"Owls hunt at night.\n")
    deep_tree(src / "deep")
    (src / "bomb.docx").write_bytes(docx_bomb(30))  # ~200 KB on disk, 30 MB of XML inside
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)  # named explicitly: opening it would wait forever for a writer
    db = str(tmp_path / "h.lancedb")

    result = cli("add-src", str(src), str(fifo), "--db", db, "--json")

    assert result.exit_code == ExitCode.PARTIAL, result.stderr
    outcomes = _outcomes(result.stdout)
    assert outcomes["herons.md"]["status"] == outcomes["zebras.txt"]["status"] == "added"
    assert "owls-\\xff.md: the file name is not valid UTF-8" in outcomes["owls-\\xff.md"]["error"]
    [deep] = [o for o in outcomes.values() if "File name too long" in (o["error"] or "")]
    assert deep["status"] == "failed"
    bomb = outcomes["bomb.docx"]["error"]
    assert "XML that decompresses to 31 MB, over the limit of 20 MB" in bomb
    assert "[ingest] max_docx_xml_mb" in bomb
    assert outcomes["pipe.txt"]["error"].endswith("pipe.txt: not a regular file")
    assert len([o for o in outcomes.values() if o["status"] == "failed"]) == 4
    assert _titles(cli, db) == ["Herons", "zebras"]


def test_a_file_name_with_a_newline_is_quoted_on_its_report_line(cli, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "owls\nadded     forged.md").write_text("Owls hunt at night.\n")
    (src / "empty\tone.txt").write_text("")
    result = cli("add-src", str(src), "--db", str(tmp_path / "h.lancedb"))
    assert result.exit_code == ExitCode.PARTIAL
    assert result.stdout.splitlines() == [
        f"added     '{src}/owls\\nadded     forged.md' → {result.stdout.split('→ ')[1].split()[0]} (1 chunk)"
    ]
    assert f"haiku: '{src}/empty\\tone.txt' is empty" in result.stderr.splitlines()


def test_a_file_over_the_size_limit_is_skipped_with_the_setting_to_raise(
    cli, tmp_path: Path, write_config
) -> None:
    write_config("[ingest]\nmax_file_mb = 0.01\n")
    (tmp_path / "small.md").write_text("Small notes about wrens.\n")
    (tmp_path / "big.txt").write_text("Long log line about starlings.\n" * 1000)  # ~31 KB
    db = str(tmp_path / "h.lancedb")
    result = cli("add-src", str(tmp_path / "small.md"), str(tmp_path / "big.txt"), "--db", db)
    assert result.exit_code == ExitCode.PARTIAL
    [line] = [line for line in result.stderr.splitlines() if "big.txt" in line]
    assert line.endswith(
        "big.txt: 30 KB, over the limit of 0.01 MB; skipped "
        "(raise [ingest] max_file_mb in the config file to add it)"
    )
    assert _titles(cli, db) == ["small"]


def test_symlinks_out_of_the_folder_need_follow_symlinks(cli, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.md").write_text("# Mine\n\nMy notes on kingfishers.\n")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "secret.md").write_text("# Secret\n\nThe safe code is 1234.\n")
    (tmp_path / "notes" / "peek").symlink_to(tmp_path / "private", target_is_directory=True)
    db = str(tmp_path / "h.lancedb")

    result = cli("add-src", str(tmp_path / "notes"), "--db", db)
    assert result.exit_code == 0, result.stderr  # left out on purpose is not a failure
    assert f"skipped: {tmp_path / 'notes' / 'peek'}: a symlink to {tmp_path / 'private'}" in result.stderr
    assert "1 added, 1 skipped" in result.stderr
    assert _titles(cli, db) == ["Mine"]

    followed = cli("add-src", str(tmp_path / "notes"), "--follow-symlinks", "--db", db, "--json")
    assert followed.exit_code == 0
    assert _outcomes(followed.stdout)["secret.md"]["status"] == "added"
    assert _titles(cli, db) == ["Mine", "Secret"]


# Runs haiku in a fresh interpreter that reports its own peak RSS at exit. VmHWM belongs to the process's
# memory since exec; rusage's maxrss would also count the pages of the (large) pytest process it forked from.
_MEASURED = """
import atexit, runpy, sys
def report():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            sys.stderr.write("peak-rss-kb " + line.split()[1] + "\\n")
atexit.register(report)
sys.argv = ["haiku", *sys.argv[1:]]
runpy.run_module("haiku_cli", run_name="__main__")
"""


def _peak_rss_mb(args: list[str]) -> tuple[int, float, str]:
    """Run `haiku ARGS` to its end: exit code, its peak resident memory in MB, its stderr."""
    done = subprocess.run([sys.executable, "-c", _MEASURED, *args], capture_output=True, text=True)
    [peak] = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("peak-rss-kb ")]
    return done.returncode, int(peak) / 1024, done.stderr


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_a_200_mb_text_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    line = b"2026-12-01 04:00:00 INFO request served in 12 ms to a client far away\n"
    with big.open("wb") as f:  # a log line, then a hole: 200 MB to read, none of them written to disk
        f.write(line)
        f.truncate(200 * 2**20 + len(line))
    db = str(tmp_path / "h.lancedb")
    code, rss, stderr = _peak_rss_mb(["add-src", str(big), "--db", db])
    assert code == ExitCode.INPUT
    assert "big.log: 200 MB, over the limit of 8 MB; skipped (raise [ingest] max_text_mb" in stderr
    # The process itself (embedder and LanceDB loaded) is about 200 MB; the file would add well over 400.
    assert 50 < rss < 350, rss


def test_a_password_protected_pdf_is_reported_as_such_and_the_rest_is_added(cli, tmp_path: Path) -> None:
    from tests.ingest.helpers import locked_pdf

    src = tmp_path / "src"
    src.mkdir()
    (src / "locked.pdf").write_bytes(locked_pdf())
    (src / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n%%EOF")
    (src / "herons.md").write_text("# Herons\n\nHerons nest in colonies by the water.\n")
    db = str(tmp_path / "h.lancedb")
    result = cli("add-src", str(src), "--db", db)
    assert result.exit_code == ExitCode.PARTIAL
    errors = [line for line in result.stderr.splitlines() if line.startswith("haiku: ")]
    assert f"haiku: {src / 'locked.pdf'}: password-protected PDF" in errors, result.stderr
    assert f"haiku: {src / 'broken.pdf'}: corrupt PDF" in errors, result.stderr
    assert _titles(cli, db) == ["Herons"]
