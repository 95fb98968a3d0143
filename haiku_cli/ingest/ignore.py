"""Which files `.gitignore` and `.haikuignore` exclude, matched with pathspec's version of git's rules."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

IGNORE_FILES = (".gitignore", ".haikuignore")


@dataclass(frozen=True)
class _IgnoreFile:
    base: Path  # the directory holding the ignore file; its patterns are relative to it
    spec: GitIgnoreSpec


def parse_ignore_file(path: Path) -> _IgnoreFile | None:
    """The patterns of one ignore file; a missing or unreadable file yields None."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _IgnoreFile(Path(os.path.abspath(path.parent)), GitIgnoreSpec.from_lines(lines))


class IgnoreRules:
    """The ignore files in force inside one directory: its parents' files plus its own."""

    def __init__(self, files: tuple[_IgnoreFile, ...] = ()) -> None:
        self._files = files

    def descend(self, directory: Path) -> IgnoreRules:
        """The rules for `directory`, adding any ignore files it holds."""
        added = [f for name in IGNORE_FILES if (f := parse_ignore_file(directory / name)) is not None]
        return IgnoreRules(self._files + tuple(added)) if added else self

    def ignored(self, path: Path, *, is_dir: bool) -> bool:
        """Whether `path` is ignored; as in git, a deeper file's matching pattern overrides its parents'."""
        result = False
        path = Path(os.path.abspath(path))  # the files' bases are absolute
        for ignore in self._files:
            try:
                rel = path.relative_to(ignore.base).as_posix()
            except ValueError:
                continue
            # A trailing slash is how pathspec knows a directory, for patterns like `build/`.
            include = ignore.spec.check_file(rel + "/" if is_dir else rel).include
            if include is not None:
                result = include
        return result
