"""Storage that fails under haiku: a read-only mount and a full disk end in one exit-3 line, and the
database stays as it was. Real file systems in a private mount namespace (`unshare`), no mocks."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FULL = "the disk is full; free some space on it, then run the command again"


def _in_namespace(setup: str, *commands: list[str], after: str = "") -> list[subprocess.CompletedProcess]:
    """Run haiku commands after `setup` (mount commands) in a private mount namespace.

    `after` is a shell command run last, still inside the namespace; its output comes as one more
    result (exit code 0).
    """
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed: cannot make a private read-only or tiny file system")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"user/mount namespaces are not available here: {probe.stderr.decode().strip()}")
    runs = [shlex.join([sys.executable, "-m", "haiku_cli", *cmd]) for cmd in commands]
    # Each command's stdout and stderr end with a separator line; stderr also carries its exit code.
    script = (
        f"set -e\n{setup}\nset +e\n"
        + "\n".join(f"{run}; echo \"rc=$?\" >&2; echo '---' >&2; echo '---'" for run in runs)
        + f"\n{after}"
    )
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.stderr.count("rc=") == len(commands), proc.stderr
    done = []
    for out, err in zip(
        proc.stdout.split("---\n"), proc.stderr.split("---\n")[: len(commands)], strict=False
    ):
        body, _, code = err.rpartition("rc=")
        done.append(subprocess.CompletedProcess([], int(code.strip()), out, body))
    if after:
        done.append(subprocess.CompletedProcess([], 0, proc.stdout.split("---\n")[len(commands)], ""))
    return done


def _add(cli, db: Path, text: str) -> None:
    result = cli("add", text, "--db", str(db))
    assert result.exit_code == 0, result.stderr


def _fill_leaving(folder: Path, kib: int) -> str:
    """A shell command filling the file system of `folder` up to its last `kib` kilobytes."""
    return (
        f"avail=$(df -k --output=avail {folder} | tail -1); "
        f"head -c $(( (avail - {kib}) * 1024 )) /dev/zero > {folder}/filler"
    )


def _big_text(tmp_path: Path) -> Path:
    """A text file of many distinct words: more chunks than a nearly full tiny disk has room for."""
    big = tmp_path / "big.txt"
    big.write_text(" ".join(f"word{i} falcon{i % 977} heron{i % 313}" for i in range(6_000)))
    return big


def test_read_only_file_system_is_one_line_and_reads_still_work(cli, tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    db = folder / "notes.lancedb"
    _add(cli, db, "Kestrels hover over fields hunting voles.")
    add, search, vacuum = _in_namespace(
        f"mount --bind {folder} {folder} && mount -o remount,ro,bind {folder}",
        ["add", "Owls hunt at night.", "--db", str(db)],
        ["search", "kestrel", "--db", str(db), "--type", "fts", "--json"],
        ["vacuum", "--db", str(db)],
    )
    for failed in (add, vacuum):
        assert failed.returncode == 3
        assert (
            failed.stderr.strip() == "haiku: database 'notes' cannot be written: the file system is read-only"
        )
    assert search.returncode == 0 and "Kestrels" in search.stdout


def test_full_disk_is_one_line_and_leaves_the_database_as_it_was(cli, tmp_path: Path) -> None:
    folder = tmp_path / "tiny"
    folder.mkdir()
    staging = tmp_path / "staging" / "notes.lancedb"
    _add(cli, staging, "Kestrels hover over fields hunting voles.")
    big = _big_text(tmp_path)
    db = folder / "notes.lancedb"
    # A tiny file system holding the database, then filled up to the last few kilobytes.
    fill = _fill_leaving(folder, kib=8)
    add, info, after = _in_namespace(
        f"mount -t tmpfs -o size=1m tmpfs {folder} && cp -r {staging} {folder}/ && {fill}",
        ["add-src", str(big), "--db", str(db)],
        ["info", "--db", str(db), "--json"],
        ["add", "Owls hunt at night.", "--db", str(db)],
    )
    assert add.returncode == 3, add.stderr
    assert add.stderr.strip() == f"haiku: database 'notes' cannot be written: {FULL}"
    assert (json.loads(info.stdout)["documents"], json.loads(info.stdout)["chunks"]) == (1, 1)
    assert after.returncode == 3  # still full, but still one line
    assert after.stderr.strip() == f"haiku: database 'notes' cannot be written: {FULL}"


def test_a_disk_full_to_the_last_byte_is_the_database_failing_not_the_output(cli, tmp_path: Path) -> None:
    # No room even for the writer lock's owner record: every writing command says which database cannot
    # be written and why (exit 3); it is not standard output failing (74). A database the add was to
    # create leaves no folder or lock file behind.
    folder = tmp_path / "full"
    folder.mkdir()
    staging = tmp_path / "staging" / "notes.lancedb"
    _add(cli, staging, "Kestrels hover over fields hunting voles.")
    listed = json.loads(cli("list", "--db", str(staging), "--json").stdout)
    doc_id = listed["documents"][0]["id"]
    db, new = folder / "notes.lancedb", folder / "new.lancedb"
    fill = f"head -c 100000000 /dev/zero > {folder}/filler 2>/dev/null || true"
    *failed, created, listing, left = _in_namespace(
        f"mount -t tmpfs -o size=2m tmpfs {folder} && cp -r {staging} {folder}/ && {fill}",
        ["add", "Owls hunt at night.", "--db", str(db)],
        ["delete", doc_id, "--db", str(db)],
        ["vacuum", "--db", str(db)],
        ["rebuild", "--db", str(db)],
        ["add", "Owls hunt at night.", "--db", str(new)],
        ["list", "--db", str(db), "--json"],
        after=f"ls -A {folder}",
    )
    for run in failed:
        assert (run.returncode, run.stderr.strip()) == (
            3,
            f"haiku: database 'notes' cannot be written: {FULL}",
        )
    assert (created.returncode, created.stderr.strip()) == (
        3,
        f"haiku: database 'new' cannot be written: {FULL}",
    )
    assert [d["id"] for d in json.loads(listing.stdout)["documents"]] == [doc_id]
    assert left.stdout.split() == ["filler", "notes.lancedb"]


def test_a_new_database_that_cannot_be_created_leaves_no_folder(cli, tmp_path: Path) -> None:
    # Room for the lock's owner record, none for the tables.
    folder = tmp_path / "tiny"
    folder.mkdir()
    new = folder / "new.lancedb"
    fill = _fill_leaving(folder, kib=12)
    created, left = _in_namespace(
        f"mount -t tmpfs -o size=2m tmpfs {folder} && {fill}",
        ["add", "Owls hunt at night.", "--db", str(new)],
        after=f"ls -A {folder}",
    )
    assert (created.returncode, created.stderr.strip()) == (
        3,
        f"haiku: database 'new' cannot be created: {FULL}",
    )
    assert left.stdout.split() == ["filler"]


def test_the_undo_of_a_write_the_full_disk_cut_short_is_the_disk_being_full(cli, tmp_path: Path) -> None:
    # A write cut short by the full disk cannot undo itself there either: its journal stays, and the next
    # writer's undo of it meets the same full disk. Each writer says so (exit 3), none is an internal error,
    # and readers still read the state before the write.
    folder = tmp_path / "tiny"
    folder.mkdir()
    staging = tmp_path / "staging" / "notes.lancedb"
    _add(cli, staging, "Kestrels hover over fields hunting voles.")
    doc_id = json.loads(cli("list", "--db", str(staging), "--json").stdout)["documents"][0]["id"]
    big = _big_text(tmp_path)
    db = folder / "notes.lancedb"
    fill = _fill_leaving(folder, kib=64)
    meta = f"import lancedb; print(*lancedb.connect({str(db)!r}).open_table('meta').to_arrow()['key'])"
    *runs, listing, journal = _in_namespace(
        f"mount -t tmpfs -o size=1m tmpfs {folder} && cp -r {staging} {folder}/ && {fill}",
        ["add-src", str(big), "--db", str(db)],
        ["add", "Owls hunt at night.", "--db", str(db)],
        ["vacuum", "--db", str(db)],
        ["delete", doc_id, "--db", str(db)],
        ["rebuild", "--db", str(db)],
        ["add-src", str(big), "--db", str(db)],
        ["list", "--db", str(db), "--json"],
        after=shlex.join([sys.executable, "-c", meta]),
    )
    full = (3, f"haiku: database 'notes' cannot be written: {FULL}")
    said = [(r.returncode, r.stderr.strip()) for r in runs]
    assert said == [full] * len(runs), [(i, s) for i, s in enumerate(said) if s != full]
    assert "pending_write" in journal.stdout.split()  # the undo each writer tried is still to be done
    assert listing.returncode == 0, listing.stderr
    assert [d["id"] for d in json.loads(listing.stdout)["documents"]] == [doc_id]
