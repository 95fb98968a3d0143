"""Expanding the paths given to `add-src` into the files to convert, and the entries to report instead."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from pathspec import GitIgnoreSpec

from haiku_cli.ingest.convert.dispatch import suffix_kind
from haiku_cli.ingest.convert.registry import SNIFF_BYTES, converter
from haiku_cli.ingest.convert.text import looks_binary
from haiku_cli.ingest.ignore import IgnoreRules
from haiku_cli.ingest.reports import LeftOut

# Directories that never hold sources worth indexing, whatever the ignore files say.
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
_SNIFF_BYTES = 4096
_FILE_URI = re.compile(r"file://(?:localhost)?(/.*)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class SkippedSource:
    """An entry of a walked tree that is reported instead of added, with its one-line reason.

    `failed` is True when it could not be read (a failure of the add) and False when it was left out
    on purpose (a symlink out of the tree).
    """

    source: str
    reason: str
    failed: bool = True


@dataclass(frozen=True)
class TextFile:
    """A file `--include` asked for whose suffix haiku does not know: it is read as plain text."""

    path: Path


class FileChoice:
    """Which files of a folder `--include` and `--exclude` (gitignore-style globs, relative to it) pick."""

    def __init__(self, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> None:
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self._include = GitIgnoreSpec.from_lines(self.include)
        self._exclude = [(p, GitIgnoreSpec.from_lines([p])) for p in self.exclude]

    def excluded_by(self, rel: str, *, is_dir: bool) -> str | None:
        """Why the entry at `rel` (posix, relative to the folder added) is left out, or None."""
        rel = rel + "/" if is_dir else rel
        for pattern, spec in self._exclude:
            if spec.match_file(rel):
                return f"--exclude {pattern}"
        if self.include and not is_dir and not self._include.match_file(rel):
            return "--include"
        return None

    def included(self, rel: str) -> bool:
        """Whether `--include` names the file at `rel`."""
        return bool(self.include) and self._include.match_file(rel)


def display_path(path: Path | str) -> str:
    """A path as it can be printed and stored: bytes of a non-UTF-8 name are shown as \\xNN escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def is_url(source: str) -> bool:
    """Whether a source argument is an http(s) URL rather than a path."""
    return source.startswith(("http://", "https://"))


def as_source(source: str) -> str:
    """The source as `add-src` reads it: a `file://` address as the path it names, `HTTP://` in lower case.

    `file:///a%20b.md` and `file://localhost/a%20b.md` are `/a b.md` (search results print such uris), so a
    document added by either form is stored under the same uri as one added by its path.
    """
    match = _FILE_URI.fullmatch(source)
    if match:
        # surrogateescape: percent-escaped bytes that are not UTF-8 name the file the way the system does.
        return unquote(match.group(1), errors="surrogateescape")
    scheme, sep, rest = source.partition("://")
    return scheme.lower() + sep + rest if sep and scheme.lower() in ("http", "https") else source


Found = Path | TextFile | SkippedSource | LeftOut


def iter_source_files(
    root: Path,
    *,
    follow_symlinks: bool = False,
    choice: FileChoice | None = None,
    known: Callable[[Path], bool] | None = None,
    listed: dict[Path, int] | None = None,
) -> Iterator[Found]:
    """Yield `root` itself unless it is a directory, else its supported files, recursively and sorted.

    Inside directories, hidden entries are skipped silently; ignored, excluded and unsupported ones
    (binary suffix-less files too) are yielded as `LeftOut`, and files `--include` names whose suffix is
    not known as `TextFile`. Entries that cannot be read (a name that is not UTF-8, a path too long, a
    permission error) are yielded as failed `SkippedSource`s, and so are symlinks leading out of `root`
    unless `follow_symlinks`. Each real directory is walked once, so symlink loops end. A suffix-less
    file `known` says is unchanged since it was read (a sync's stat) is not opened to sniff it again.
    `listed` is given each directory listed, with its modification time as it was just before.
    """
    choice = choice or FileChoice()
    if not _is_utf8(str(root)):
        yield SkippedSource(display_path(root), "the name is not valid UTF-8; rename it to add it")
        return
    try:
        is_dir = root.is_dir()
    except OSError as exc:
        yield _unreadable(root, exc)
        return
    if not is_dir:
        # A named file is always yielded so that the caller reports what is wrong with it.
        yield TextFile(root) if suffix_kind(root) is None and choice.included(root.name) else root
        return
    rules = _inherited_rules(root)
    by = rules.ignored_by(root, is_dir=True)
    if by is not None:
        yield LeftOut(source=display_path(root), why="ignored", detail=by)
        return
    walk = _Walk(root, follow_symlinks, choice, known, listed)
    yield from walk.directory(root, rules)


def iter_source_scope(
    root: Path,
    path: Path,
    *,
    follow_symlinks: bool = False,
    choice: FileChoice | None = None,
    known: Callable[[Path], bool] | None = None,
    listed: dict[Path, int] | None = None,
) -> Iterator[Found]:
    """What `iter_source_files(root)` yields at or under `path` (a file or folder inside `root`).

    The folders on the way down must not be hidden, skipped or ignored, and their ignore files apply,
    as in a walk of the whole tree; nothing is yielded for a path that is gone.
    """
    try:
        inside = path.relative_to(root)
    except ValueError:
        return
    if not root.is_dir() or not os.path.lexists(path):
        return
    walk = _Walk(root, follow_symlinks, choice or FileChoice(), known, listed)
    rules = _inherited_rules(root).descend(root)
    folder = root
    for name in inside.parts[:-1]:
        folder = folder / name
        if (
            name.startswith(".")
            or _skip_dir(folder, name)
            or rules.ignored(folder, is_dir=True)
            or (folder.is_symlink() and not follow_symlinks and not walk._inside(folder))
        ):
            return
        rules = rules.descend(folder)
    if path == root:
        yield from walk.directory(root, _inherited_rules(root))
    elif not path.name.startswith("."):
        try:
            yield from walk._entry(path, path, rules)
        except OSError as exc:
            yield _unreadable(path, exc)


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


class _Walk:
    """One walk of a tree: its real top, whether links may leave it, and the real directories seen."""

    def __init__(
        self,
        root: Path,
        follow_symlinks: bool,
        choice: FileChoice,
        known: Callable[[Path], bool] | None = None,
        listed: dict[Path, int] | None = None,
    ) -> None:
        self.root = root
        self.known = known
        self.listed = listed
        self.top = os.path.realpath(root)
        self.follow_symlinks = follow_symlinks
        self.choice = choice
        self.visited: set[str] = set()

    def directory(self, directory: Path, rules: IgnoreRules) -> Iterator[Found]:
        real = os.path.realpath(directory)
        if real in self.visited:
            return  # a symlink loop, or a second link to a directory already walked
        self.visited.add(real)
        rules = rules.descend(directory)
        try:
            if self.listed is not None:
                # Taken before the listing: an entry made or removed after it moves the time again.
                self.listed[directory] = os.stat(directory).st_mtime_ns
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield _unreadable(directory, exc, what="cannot read the directory")
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                yield from self._entry(Path(entry.path), entry, rules)
            except OSError as exc:  # e.g. a path longer than the system allows
                yield _unreadable(Path(entry.path), exc)

    def _entry(self, path: Path, entry: os.DirEntry[str] | Path, rules: IgnoreRules) -> Iterator[Found]:
        is_dir = entry.is_dir()  # follows symlinks; a broken or looping link is neither dir nor file
        if not is_dir and not entry.is_file():
            return
        if entry.is_symlink() and not self.follow_symlinks and not self._inside(path):
            target = display_path(os.path.realpath(path))
            yield SkippedSource(
                display_path(path),
                f"a symlink to {target}, outside the folder being added; --follow-symlinks adds it",
                failed=False,
            )
            return
        if not _is_utf8(entry.name):
            kind = "folder" if is_dir else "file"
            reason = f"the {kind} name is not valid UTF-8; rename it to add it"
            yield SkippedSource(display_path(path), reason)
            return
        if is_dir and _skip_dir(path, entry.name):
            return
        left_out = self._left_out(path, is_dir, rules)
        if left_out is not None:
            yield left_out
        elif is_dir:
            yield from self.directory(path, rules)
        elif path.suffix and (format_name := suffix_kind(path)) is not None:
            other = self._mistaken(path, format_name)
            if other is None:
                yield path
            else:
                yield LeftOut(source=display_path(path), why="unsupported", detail=f"{path.suffix} ({other})")
        elif not path.suffix or self.choice.included(path.relative_to(self.root).as_posix()):
            # Read as text (suffix-less, or asked for), unless it is an executable, an image or the like.
            if not (self.known is not None and self.known(path)) and _binary(path):
                yield LeftOut(source=display_path(path), why="unsupported", detail=path.suffix or "binary")
            else:
                yield TextFile(path) if path.suffix else path
        else:
            yield LeftOut(source=display_path(path), why="unsupported", detail=path.suffix.lower())

    def _mistaken(self, path: Path, kind: str) -> str | None:
        """What a file holds instead of what its suffix says (a video named `.ts`); only a format that
        asks has its files' first bytes read, and a file a sync knows unchanged is not read again."""
        mistaken = converter(kind).mistaken
        if mistaken is None or (self.known is not None and self.known(path)):
            return None
        return mistaken(_head(path))

    def _left_out(self, path: Path, is_dir: bool, rules: IgnoreRules) -> LeftOut | None:
        by = rules.ignored_by(path, is_dir=is_dir)
        if by is not None:
            return LeftOut(source=display_path(path), why="ignored", detail=by)
        if not self.choice.include and not self.choice.exclude:
            return None
        excluded = self.choice.excluded_by(path.relative_to(self.root).as_posix(), is_dir=is_dir)
        if excluded is not None:
            return LeftOut(source=display_path(path), why="excluded", detail=excluded)
        return None

    def _inside(self, path: Path) -> bool:
        real = os.path.realpath(path)
        return real == self.top or real.startswith(self.top.rstrip(os.sep) + os.sep)


def _is_utf8(name: str) -> bool:
    # Linux hands undecodable name bytes to Python as lone surrogates, which no UTF-8 output can carry.
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unreadable(path: Path, exc: OSError, what: str = "cannot read") -> SkippedSource:
    return SkippedSource(_shortened(display_path(path)), f"{what} ({exc.strerror or exc})")


def _shortened(label: str, keep: int = 80) -> str:
    # A path too long for the system is thousands of characters; its two ends are enough to find it.
    if len(label) <= 3 * keep:
        return label
    return f"{label[:keep]}…{label[-keep:]} ({len(label)} characters)"


def _skip_dir(path: Path, name: str) -> bool:
    if name in _SKIP_DIRS or name.endswith(".lancedb"):
        return True
    # Python virtual environments under any name.
    return (path / "pyvenv.cfg").is_file()


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(SNIFF_BYTES)
    except OSError:
        return b""  # reading it says what is wrong, in the report


def _binary(path: Path) -> bool:
    with path.open("rb") as f:
        return looks_binary(f.read(_SNIFF_BYTES))
