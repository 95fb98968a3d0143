"""Directory walking for add-src."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from haiku_cli.ingest.sources import iter_source_files


def touch(root: Path, rel: str, data: bytes = b"text\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def rels(root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in iter_source_files(root)]


def test_single_files_are_yielded_as_is(tmp_path: Path) -> None:
    for name in ("a.md", "b.xyz", ".hidden.txt"):
        path = touch(tmp_path, name)
        assert list(iter_source_files(path)) == [path]
    missing = tmp_path / "missing.txt"
    assert list(iter_source_files(missing)) == [missing]


def test_walk_is_recursive_sorted_and_filtered(tmp_path: Path) -> None:
    for rel in [
        "b.md",
        "a.txt",
        "README",
        "sub/c.pdf",
        "sub/deeper/d.docx",
        "sub/page.HTML",
        "image.png",
        "archive.tar.gz",
        ".hidden.md",
        ".git/config.txt",
        ".venv/x.md",
        "__pycache__/m.txt",
        "node_modules/pkg/readme.md",
        "store.lancedb/data.txt",
        "myenv/lib/site.md",
        "myenv/pyvenv.cfg",
    ]:
        touch(tmp_path, rel)
    touch(tmp_path, "tool", b"\x7fELF\x02\x01\x01\x00\x00\x00")  # a suffix-less binary
    assert rels(tmp_path) == ["README", "a.txt", "b.md", "sub/c.pdf", "sub/deeper/d.docx", "sub/page.HTML"]


def test_gitignore(tmp_path: Path) -> None:
    touch(tmp_path, ".gitignore", b"# comment\n*.log\nbuild/\n/top.md\ndocs/**/draft*.md\n!keep.log\n")
    for rel in [
        "a.log",
        "keep.log",
        "top.md",
        "sub/top.md",
        "build/out.md",
        "sub/build/out.md",
        "docs/x/draft1.md",
        "docs/x/final.md",
        "notes.md",
    ]:
        touch(tmp_path, rel)
    touch(tmp_path, "sub/.haikuignore", b"secret.md\n")
    touch(tmp_path, "sub/secret.md")
    assert rels(tmp_path) == ["docs/x/final.md", "keep.log", "notes.md", "sub/top.md"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinks_followed_without_loops(tmp_path: Path) -> None:
    root = tmp_path / "root"
    touch(root, "docs/a.md")
    touch(tmp_path, "outside/b.md")
    (root / "docs" / "loop").symlink_to(root, target_is_directory=True)
    (root / "docs" / "self").symlink_to(root / "docs", target_is_directory=True)
    (root / "link.md").symlink_to(tmp_path / "outside" / "b.md")
    (root / "outside").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "broken.md").symlink_to(tmp_path / "nowhere.md")
    assert rels(root) == ["docs/a.md", "link.md", "outside/b.md"]


def test_ignore_files_above_the_root_apply_inside_a_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    touch(tmp_path, ".gitignore", b"*.log\n/docs/private/\n")
    touch(tmp_path, "docs/a.md")
    touch(tmp_path, "docs/b.log")
    touch(tmp_path, "docs/private/c.md")
    assert rels(tmp_path / "docs") == ["a.md"]
    monkeypatch.chdir(tmp_path / "docs")
    assert [p.as_posix() for p in iter_source_files(Path("."))] == ["a.md"]


def test_parent_ignore_files_do_not_apply_outside_a_repository(tmp_path: Path) -> None:
    touch(tmp_path, ".gitignore", b"*.log\n")
    touch(tmp_path, "docs/b.log")
    assert rels(tmp_path / "docs") == ["b.log"]
