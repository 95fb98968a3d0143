"""Local paths: a file or a folder walked with the ignore rules; a `stat` says whether a file changed."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haiku_cli.ingest.convert.dispatch import file_uri, suffix_kind
from haiku_cli.ingest.document import ConversionError
from haiku_cli.ingest.kinds.base import Contents, Freshness, ListRequest, Reading, Seen, SyncPlan
from haiku_cli.ingest.reports import LeftOut, SourceOutcome
from haiku_cli.ingest.source_walk import (
    FileChoice,
    Found,
    SkippedSource,
    TextFile,
    display_path,
    iter_source_files,
    iter_source_scope,
)
from haiku_cli.store.source_state import by_stat, path_of

if TYPE_CHECKING:
    from haiku_cli.config.settings import IngestSettings
    from haiku_cli.ingest.document import ConvertedDocument
    from haiku_cli.ingest.reports import SyncStatus
    from haiku_cli.store.source_tables import FileState, RememberedSource


@dataclass(frozen=True)
class LocalFolder:
    """A folder being added: a stored file under it that no longer exists has left it."""

    prefix: str

    def left(self, uri: str) -> str | None:
        if not uri.startswith(self.prefix):
            return None
        path = path_of(uri)
        return None if os.path.lexists(path) else display_path(path)


class LocalPaths:
    """Files and folders on this machine (the kind of every source no other kind claims)."""

    name = "local"
    described = "local paths"
    polled = False
    listed_remotely = False

    def claims(self, source: str) -> bool:
        return True

    def holds(self, item: object) -> bool:
        return isinstance(item, Path | TextFile)

    def key(self, source: str) -> str:
        return os.path.abspath(Path(source).expanduser())

    def stored_uri(self, source: str) -> str:
        return Path(os.path.abspath(os.path.expanduser(source))).as_uri()

    def display(self, source: str) -> str:
        return display_path(source)

    def local_path(self, key: str) -> Path | None:
        return Path(key)

    def absent(self, source: str) -> str | None:
        if os.path.lexists(Path(source).expanduser()):
            return None
        return f"{display_path(source)}: no such file or directory"

    def contents(self, source: str, request: ListRequest) -> Contents:
        why = self.absent(source)
        if why is not None:
            raise ConversionError(why)
        path = Path(source).expanduser()
        key = self.key(source)
        try:
            is_dir = Path(key).is_dir()
        except OSError:
            is_dir = False
        walk = iter_source_files(path, follow_symlinks=request.follow_symlinks, choice=request.choice)
        # Checked when the walk is: a folder's gone files are looked for once it has been walked.
        gone = LocalFolder(Path(os.path.abspath(path)).as_uri().rstrip("/") + "/") if path.is_dir() else None
        return Contents(
            "folder" if is_dir else "file", walk, follow_symlinks=request.follow_symlinks, gone=gone
        )

    def label(self, item: Any) -> str:
        return str(item.path if isinstance(item, TextFile) else item)

    def uri(self, item: Any) -> str:
        return file_uri(item.path if isinstance(item, TextFile) else item)

    def size(self, item: Any) -> int:
        try:
            return (item.path if isinstance(item, TextFile) else Path(item)).stat().st_size
        except OSError:
            return 0  # reported when it is read

    def read(self, item: Any, reading: Reading, fetched: Any | None = None) -> tuple[Seen, ConvertedDocument]:
        from haiku_cli.ingest.convert import convert_file

        path, as_text = (item.path, True) if isinstance(item, TextFile) else (item, False)
        looked = _look_at(path)  # before it is read: a change while it is read shows next time
        return looked, convert_file(path, reading.limits, as_text=as_text)

    def plan_sync(
        self,
        source: RememberedSource,
        states: dict[str, FileState],
        scope: Sequence[Path] | None,
        reading: Reading,
        plan: SyncPlan,
    ) -> SyncPlan:
        root = Path(source.source)
        problem = _unreachable(root, len(states))
        if problem is not None:
            plan.problem = problem
            return plan
        choice = FileChoice(source.include, source.exclude)

        def known(path: Path) -> bool:  # a suffix-less file whose stat is the stored one: not sniffed again
            stored = states.get(file_uri(path))
            return stored is not None and _unchanged(path, stored)

        plan.listed = {}
        walked = iter_source_files(
            root, follow_symlinks=source.follow_symlinks, choice=choice, known=known, listed=plan.listed
        )
        if scope is not None:
            walked = _scoped(root, scope, source.follow_symlinks, choice, known, plan.listed)
        _plan_walk(plan, walked, states)
        return plan

    def freshness(
        self, state: FileState, content_hash: str | None = None, limits: IngestSettings | None = None
    ) -> Freshness:
        found = by_stat(state)
        if found is not Freshness.CHANGED:
            return found
        if content_hash is None:
            return Freshness.CHANGED
        return _by_content(Path(path_of(state.uri)), content_hash, limits)

    def asked_freshness(
        self, state: FileState, reading: Reading, timeout: float
    ) -> tuple[Freshness, str | None]:
        return self.freshness(state, None, reading.limits), None


def _by_content(path: Path, stored_hash: str, limits: IngestSettings | None) -> Freshness:
    """A file whose stat moved: read it, and compare what would be stored with what is."""
    return documents_by_content(path, {"": stored_hash}, limits)[""]


def documents_by_content(
    path: Path, stored: Mapping[str, str], limits: IngestSettings | None
) -> dict[str, Freshness]:
    """A file whose stat moved, read once: whether each of the documents stored from it (by uri: the
    file's own under "", and those read out of it, a mail's attachments) would be stored as it is."""
    from haiku_cli.config.settings import IngestSettings
    from haiku_cli.ingest.convert import convert_file
    from haiku_cli.ingest.stored import content_hash, stored_content

    try:
        doc = convert_file(path, limits or IngestSettings(), as_text=suffix_kind(path) is None)
    except ConversionError:
        return dict.fromkeys(stored, Freshness.CHANGED)  # it was readable when stored
    now = {d.uri: content_hash(stored_content(d), [p.data for p in d.pictures]) for d in doc.children}
    now[""] = content_hash(stored_content(doc), [p.data for p in doc.pictures])
    return {
        uri: Freshness.FRESH if now.get(uri) == digest else Freshness.CHANGED
        for uri, digest in stored.items()
    }


def _plan_walk(plan: SyncPlan, walked: Iterator[Found], states: dict[str, FileState]) -> None:
    positions = itertools.count()
    seen: set[str] = set()
    kept_under: list[str] = []  # uris of folders that could not be read: what was under them stays
    for entry in walked:
        position = next(positions)
        if isinstance(entry, LeftOut):
            continue  # not the folder's any more, as a file that left it
        if isinstance(entry, SkippedSource):
            status = "failed" if entry.failed else "skipped"
            error = f"{entry.source}: {entry.reason}" if entry.failed else None
            note = None if entry.failed else entry.reason
            plan.outcomes.append(
                SourceOutcome.at(position, source=entry.source, status=status, error=error, note=note)
            )
            if entry.failed:
                kept_under.append(file_uri(Path(entry.source)))
            continue
        path = entry.path if isinstance(entry, TextFile) else entry
        uri = file_uri(path)
        seen.add(uri)
        stored = states.get(uri)
        if stored is not None and _unchanged(path, stored):
            plan.unchanged += 1
        else:
            plan.items.append((position, entry))
    plan.gone = [
        s for uri, s in states.items() if uri not in seen and not any(_under(uri, k) for k in kept_under)
    ]


def _look_at(path: Path) -> Seen:

    try:
        return Seen.file(path, path.stat())
    except FileNotFoundError:  # gone since the walk found it: in the words convert_file uses
        raise ConversionError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConversionError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def _unreachable(root: Path, documents: int) -> tuple[SyncStatus, str] | None:
    """Why a source cannot be read as a whole (its documents are then kept), or None."""
    kept = f"its {documents} document{'s' * (documents != 1)} are kept until it is back or forgotten"
    if not os.path.lexists(root):
        return "missing", f"{root}: no such file or directory; {kept} (haiku forget-src)"
    try:
        if root.is_dir():
            with os.scandir(root):
                pass
        elif not os.path.exists(root):
            return "missing", f"{root}: a broken symlink; {kept}"
    except OSError as exc:
        return "unreadable", f"{root}: cannot read ({exc.strerror or exc}); {kept}"
    return None


def _unchanged(path: Path, stored: FileState) -> bool:
    """Whether the file's size and modification time are those stored (then it is not read)."""
    try:
        found = os.stat(path)
    except OSError:
        return False  # read it: the read reports what is wrong
    return stored.size is not None and (found.st_size, found.st_mtime_ns) == (stored.size, stored.mtime_ns)


def _scoped(
    root: Path,
    scope: Sequence[Path],
    follow_symlinks: bool,
    choice: FileChoice,
    known: Callable[[Path], bool],
    listed: dict[Path, int],
) -> Iterator[Found]:
    done: set[Path] = set()
    for path in sorted(set(scope)):
        if any(path == d or d in path.parents for d in done):
            continue  # inside a folder already walked
        done.add(path)
        yield from iter_source_scope(
            root, path, follow_symlinks=follow_symlinks, choice=choice, known=known, listed=listed
        )


def _under(uri: str, prefix: str) -> bool:
    return uri == prefix or uri.startswith(prefix.rstrip("/") + "/")
