"""A small subset of .gitignore matching: globs, `**`, anchored and directory-only patterns, `!` negation."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

IGNORE_FILES = (".gitignore", ".haikuignore")


@dataclass(frozen=True)
class _Rule:
    base: Path  # the directory holding the ignore file; patterns are relative to it
    regex: re.Pattern[str]
    anchored: bool  # matched against the whole relative path rather than the name alone
    dir_only: bool
    negated: bool


def _glob_to_regex(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("(?:/.*)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and "]" in glob[i + 2 :]:
            end = glob.index("]", i + 2)
            body = glob[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end
        elif c == "\\" and i + 1 < len(glob):
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def parse_ignore_file(path: Path) -> list[_Rule]:
    """The rules of one ignore file; an unreadable file yields none."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    base = Path(os.path.abspath(path.parent))
    rules = []
    for raw in lines:
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:] if negated else line
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        # A slash anywhere but the end anchors the pattern to the ignore file's directory.
        anchored = "/" in line
        line = line.lstrip("/")
        if not line:
            continue
        rules.append(_Rule(base, re.compile(_glob_to_regex(line) + r"\Z"), anchored, dir_only, negated))
    return rules


class IgnoreRules:
    """The rules in force inside one directory: its parents' rules plus its own ignore files."""

    def __init__(self, rules: tuple[_Rule, ...] = ()) -> None:
        self._rules = rules

    def descend(self, directory: Path) -> IgnoreRules:
        """The rules for `directory`, adding any ignore files it holds."""
        added = [r for name in IGNORE_FILES for r in parse_ignore_file(directory / name)]
        return IgnoreRules(self._rules + tuple(added)) if added else self

    def ignored(self, path: Path, *, is_dir: bool) -> bool:
        """Whether `path` is ignored; the last matching rule wins, as in git."""
        result = False
        path = Path(os.path.abspath(path))  # the rules' bases are absolute
        for rule in self._rules:
            if rule.dir_only and not is_dir:
                continue
            try:
                rel = path.relative_to(rule.base).as_posix()
            except ValueError:
                continue
            target = rel if rule.anchored else path.name
            if rule.regex.match(target):
                result = not rule.negated
        return result
