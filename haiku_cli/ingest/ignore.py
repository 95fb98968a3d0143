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
    path: Path


def parse_ignore_file(path: Path) -> _IgnoreFile | None:
    """The patterns of one ignore file; a missing or unreadable file yields None."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    base = Path(os.path.abspath(path.parent))
    return _IgnoreFile(base, GitIgnoreSpec.from_lines(lines), base / path.name)


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
        return self.ignored_by(path, is_dir=is_dir) is not None

    def ignored_by(self, path: Path, *, is_dir: bool) -> str | None:
        """`FILE: PATTERN` of the ignore file and pattern that ignore `path`; None when it is not ignored."""
        if not self._files:
            return None  # most folders have none: no path to build (a sync walks every entry each time)
        result = None
        path = Path(os.path.abspath(path))  # the files' bases are absolute
        for ignore in self._files:
            try:
                rel = path.relative_to(ignore.base).as_posix()
            except ValueError:
                continue
            # A trailing slash is how pathspec knows a directory, for patterns like `build/`.
            check = ignore.spec.check_file(rel + "/" if is_dir else rel)
            if check.include is not None and check.index is not None:
                pattern = ignore.spec.patterns[check.index].pattern
                if isinstance(pattern, bytes):  # pathspec allows bytes patterns; ignore files are text
                    pattern = pattern.decode(errors="replace")
                result = f"{ignore.path}: {pattern}" if check.include else None
        return result
