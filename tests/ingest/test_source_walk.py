"""Directory walking for add-src."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from haiku_cli.ingest.kinds import unread_scheme
from haiku_cli.ingest.reports import LeftOut
from haiku_cli.ingest.source_walk import (
    FileChoice,
    SkippedSource,
    TextFile,
    as_source,
    iter_source_files,
)


def touch(root: Path, rel: str, data: bytes = b"text\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def rels(root: Path, *, follow_symlinks: bool = False) -> list[str]:
    entries = iter_source_files(root, follow_symlinks=follow_symlinks)
    return [p.relative_to(root).as_posix() for p in entries if isinstance(p, Path)]


def skipped(root: Path, *, follow_symlinks: bool = False) -> list[SkippedSource]:
    entries = iter_source_files(root, follow_symlinks=follow_symlinks)
    return [e for e in entries if isinstance(e, SkippedSource)]


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
        "image.gif",
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


def _links(tmp_path: Path) -> Path:
    """A tree with links inside it, out of it, in loops and broken; returns its root."""
    root = tmp_path / "root"
    touch(root, "docs/a.md")
    touch(tmp_path, "outside/b.md")
    (tmp_path / "outside" / "back").symlink_to(root, target_is_directory=True)
    (root / "docs" / "loop").symlink_to(root, target_is_directory=True)
    (root / "docs" / "self").symlink_to(root / "docs", target_is_directory=True)
    (root / "docs" / "same.md").symlink_to(root / "docs" / "a.md")
    (root / "link.md").symlink_to(tmp_path / "outside" / "b.md")
    (root / "outside").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "broken.md").symlink_to(tmp_path / "nowhere.md")
    (root / "ping.md").symlink_to(root / "pong.md")
    (root / "pong.md").symlink_to(root / "ping.md")
    return root


def test_symlinks_out_of_the_tree_are_skipped_and_reported(tmp_path: Path) -> None:
    root = _links(tmp_path)
    assert rels(root) == ["docs/a.md", "docs/same.md"]  # links inside the tree are followed; loops end
    link, outside, *loops = skipped(root)
    assert [(Path(s.source).name, s.failed) for s in (link, outside)] == [
        ("link.md", False),
        ("outside", False),
    ]
    for s in (link, outside):
        assert "outside the folder being added; --follow-symlinks adds it" in s.reason
    assert str(tmp_path / "outside") in outside.reason
    assert _loop_reports(loops) == ["ping.md", "pong.md"]


def _loop_reports(reported: list[SkippedSource]) -> list[str]:
    assert all(s.failed and "Too many levels of symbolic links" in s.reason for s in reported)
    return [Path(s.source).name for s in reported]


def test_follow_symlinks_adds_what_links_lead_to_and_still_ends_loops(tmp_path: Path) -> None:
    root = _links(tmp_path)
    assert rels(root, follow_symlinks=True) == ["docs/a.md", "docs/same.md", "link.md", "outside/b.md"]
    assert _loop_reports(skipped(root, follow_symlinks=True)) == ["ping.md", "pong.md"]


def test_a_named_symlink_is_what_the_user_asked_for(tmp_path: Path) -> None:
    touch(tmp_path, "real/a.md")
    (tmp_path / "named").symlink_to(tmp_path / "real", target_is_directory=True)
    assert rels(tmp_path / "named") == ["a.md"]


def test_undecodable_names_are_reported_not_added(tmp_path: Path) -> None:
    touch(tmp_path, "good.md")
    os.makedirs(os.fsencode(tmp_path) + b"/bad\xffdir")
    touch(tmp_path, os.fsdecode(b"bad\xffdir/inside.md"))
    touch(tmp_path, os.fsdecode(b"caf\xe9.md"))
    assert rels(tmp_path) == ["good.md"]
    reported = {(Path(s.source).name, s.reason, s.failed) for s in skipped(tmp_path)}
    assert reported == {
        ("bad\\xffdir", "the folder name is not valid UTF-8; rename it to add it", True),
        ("caf\\xe9.md", "the file name is not valid UTF-8; rename it to add it", True),
    }


def deep_tree(root: Path, depth: int = 24) -> None:
    """Folders nested beyond the system's path length limit, with a file at the bottom."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d" * 200, dir_fd=fd)
            below = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = below
        out = os.open("deep.md", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        os.write(out, b"Foxes den in the deepest folder.\n")
        os.close(out)
    finally:
        os.close(fd)


def test_a_tree_deeper_than_the_path_limit_is_reported_not_fatal(tmp_path: Path) -> None:
    touch(tmp_path, "a.md")
    deep_tree(tmp_path / "deep")
    touch(tmp_path, "z.md")
    assert rels(tmp_path) == ["a.md", "z.md"]
    [reported] = skipped(tmp_path)
    assert reported.failed and "File name too long" in reported.reason
    assert "characters)" in reported.source and len(reported.source) < 250  # both ends, not 4,000 characters


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
    assert [p.as_posix() for p in iter_source_files(Path(".")) if isinstance(p, Path)] == ["a.md"]


def test_parent_ignore_files_do_not_apply_outside_a_repository(tmp_path: Path) -> None:
    touch(tmp_path, ".gitignore", b"*.log\n")
    touch(tmp_path, "docs/b.log")
    assert rels(tmp_path / "docs") == ["b.log"]


@pytest.mark.parametrize(
    ("given", "read_as"),
    [
        ("file:///notes/a%20b.md", "/notes/a b.md"),
        ("FILE://localhost/notes/%C3%A9.md", "/notes/é.md"),
        ("file:///notes/%FF.md", "/notes/" + b"\xff".decode("utf-8", "surrogateescape") + ".md"),
        ("HTTPS://Example.org/Page", "https://Example.org/Page"),
        ("notes/file:///x", "notes/file:///x"),
    ],
)
def test_addresses_are_read_as_the_path_or_url_they_name(given: str, read_as: str) -> None:
    assert as_source(given) == read_as and unread_scheme(read_as) is None


def test_a_folder_named_like_a_scheme_is_still_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ftp:" / "x").mkdir(parents=True)
    assert unread_scheme("ftp://x") is None
    assert "haiku reads only local paths" in (unread_scheme("gs://x") or "")
    assert unread_scheme("s3://bucket/prefix/") is None


def left_out(root: Path, choice: FileChoice | None = None) -> list[tuple[str, str, str]]:
    entries = iter_source_files(root, choice=choice)
    return [
        (Path(e.source).relative_to(root).as_posix(), e.why, e.detail)
        for e in entries
        if isinstance(e, LeftOut)
    ]


def test_unsupported_and_ignored_entries_are_reported_with_the_reason(tmp_path: Path) -> None:
    tmp_path = tmp_path / "folder"
    touch(tmp_path, ".gitignore", b"# built\nbuild/\n*.log\n")
    for rel in [
        "a.md",
        "fig.GIF",
        "notes.org",
        "build/out.md",
        "run.log",
        ".hidden.png",
        "node_modules/x.png",
    ]:
        touch(tmp_path, rel)
    touch(tmp_path, "tool", b"\x7fELF\x02\x01\x01\x00\x00\x00")
    ignore = f"{tmp_path / '.gitignore'}"
    assert left_out(tmp_path) == [
        ("build", "ignored", f"{ignore}: build/"),
        ("fig.GIF", "unsupported", ".gif"),
        ("notes.org", "unsupported", ".org"),
        ("run.log", "ignored", f"{ignore}: *.log"),
        ("tool", "unsupported", "binary"),
    ]


def test_a_folder_a_parent_ignore_file_ignores_says_which_file_left_it_out(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    touch(tmp_path, ".gitignore", b"/data/\n")
    touch(tmp_path, "data/a.md")
    assert list(iter_source_files(tmp_path / "data")) == [
        LeftOut(source=str(tmp_path / "data"), why="ignored", detail=f"{tmp_path / '.gitignore'}: /data/")
    ]


def test_include_and_exclude_choose_files_and_read_other_suffixes_as_text(tmp_path: Path) -> None:
    tmp_path = tmp_path / "folder"
    for rel in ["a.md", "b.txt", "notes.org", "sub/c.org", "sub/draft.md", "drafts/d.md", "x.py"]:
        touch(tmp_path, rel)
    touch(tmp_path, "pic.org", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    choice = FileChoice(include=["*.md", "*.org"], exclude=["drafts/", "draft*"])
    found = list(iter_source_files(tmp_path, choice=choice))
    assert [p.relative_to(tmp_path).as_posix() for p in found if isinstance(p, Path)] == ["a.md"]
    assert [t.path.relative_to(tmp_path).as_posix() for t in found if isinstance(t, TextFile)] == [
        "notes.org",
        "sub/c.org",
    ]
    assert left_out(tmp_path, choice) == [
        ("b.txt", "excluded", "--include"),
        ("drafts", "excluded", "--exclude drafts/"),
        ("pic.org", "unsupported", ".org"),
        ("sub/draft.md", "excluded", "--exclude draft*"),
        ("x.py", "excluded", "--include"),
    ]
    named = touch(tmp_path, "one.org")
    assert list(iter_source_files(named, choice=choice)) == [TextFile(named)]
    assert list(iter_source_files(named)) == [named]
