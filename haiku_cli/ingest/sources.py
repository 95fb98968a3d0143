"""Expanding the paths given to `add-src` into the files to convert."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from haiku_cli.ingest.convert.dispatch import suffix_kind
from haiku_cli.ingest.convert.text import looks_binary
from haiku_cli.ingest.ignore import IgnoreRules

# Directories that never hold sources worth indexing, whatever the ignore files say.
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
_SNIFF_BYTES = 4096


def iter_source_files(root: Path) -> Iterator[Path]:
    """Yield `root` itself unless it is a directory, else its supported files, recursively and sorted.

    Inside directories, hidden and ignored entries, unsupported suffixes and binary suffix-less files are
    skipped silently; symlinks are followed but each real directory is walked once.
    """
    if not root.is_dir():
        yield root  # a named file is always yielded so that the caller reports what is wrong with it
        return
    visited: set[str] = set()
    yield from _walk(root, _inherited_rules(root), visited)


def _inherited_rules(root: Path) -> IgnoreRules:
    """Ignore files of the directories above `root`, up to the top of its git work tree if it is in one."""
    absolute = Path(os.path.abspath(root))
    for top in absolute.parents:
        if (top / ".git").exists():
            break
    else:
        return IgnoreRules()  # outside a repository, parents' ignore files are not ours to apply
    rules = IgnoreRules()
    chain = [absolute, *absolute.parents]
    for directory in reversed(chain[1 : chain.index(top) + 1]):
        rules = rules.descend(directory)
    return rules


def _walk(directory: Path, rules: IgnoreRules, visited: set[str]) -> Iterator[Path]:
    real = os.path.realpath(directory)
    if real in visited:
        return  # a symlink loop, or a second link to a directory already walked
    visited.add(real)
    rules = rules.descend(directory)
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return  # unreadable directory: nothing to offer
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()  # follows symlinks; a broken link is neither dir nor file
            is_file = not is_dir and entry.is_file()
        except OSError:
            continue
        if is_dir:
            if not _skip_dir(path, entry.name) and not rules.ignored(path, is_dir=True):
                yield from _walk(path, rules, visited)
        elif is_file and not rules.ignored(path, is_dir=False) and _wanted_file(path):
            yield path


def _skip_dir(path: Path, name: str) -> bool:
    if name in _SKIP_DIRS or name.endswith(".lancedb"):
        return True
    # Python virtual environments under any name.
    return (path / "pyvenv.cfg").is_file()


def _wanted_file(path: Path) -> bool:
    kind = suffix_kind(path)
    if kind is None:
        return False
    if path.suffix:
        return True
    # Suffix-less files are read as text, so leave out executables and other binaries here.
    try:
        with path.open("rb") as f:
            return not looks_binary(f.read(_SNIFF_BYTES))
    except OSError:
        return False
