"""Which remembered source each item of an add belongs to, and what its file or URL was when it was read."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haiku_cli.ingest.convert.dispatch import file_uri
from haiku_cli.ingest.convert.url import Validators
from haiku_cli.ingest.objects import is_object_uri
from haiku_cli.ingest.reports import SourceOutcome
from haiku_cli.ingest.sources import FileChoice, is_url
from haiku_cli.store.sources import FileState, RememberedSource, SourceKind

# The outcomes whose document stands for its file once the add is done.
_HELD = ("added", "updated", "unchanged")


def source_key(source: str) -> str:
    """How a source given to `add-src` is remembered: a URL or `s3://` address as it is, a path made
    absolute (not resolved)."""
    return source if is_url(source) or is_object_uri(source) else os.path.abspath(Path(source).expanduser())


def remembered(
    source: str,
    *,
    title: str | None,
    metadata: dict[str, Any],
    follow_symlinks: bool,
    choice: FileChoice | None = None,
    kind: SourceKind | None = None,
) -> RememberedSource:
    """The record of a source being added now, with the options it is added with (`kind`: as its
    listing found it, for a source on object storage)."""
    key = source_key(source)
    return RememberedSource(
        source=key,
        kind=kind or _kind_of(source, key),
        title=title,
        metadata=metadata,
        follow_symlinks=follow_symlinks,
        include=list(choice.include) if choice else [],
        exclude=list(choice.exclude) if choice else [],
    )


def _kind_of(source: str, key: str) -> SourceKind:
    if is_url(source):
        return "url"
    try:
        return "folder" if Path(key).is_dir() else "file"
    except OSError:
        return "file"


@dataclass(frozen=True, slots=True)  # a large add holds one per file
class Seen:
    """A file's size and modification time, or a URL's validators, taken before it was read."""

    uri: str
    size: int | None = None
    mtime_ns: int | None = None
    validators: Validators | None = None

    @classmethod
    def file(cls, path: Path, stat: os.stat_result) -> Seen:
        """A file as `stat` found it."""
        return cls(file_uri(path), stat.st_size, stat.st_mtime_ns)


def states_of(
    outcomes: Iterable[SourceOutcome], owners: Mapping[int, str], seen: Mapping[int, Seen]
) -> list[FileState]:
    """The file states an add leaves: one per item of a remembered source whose document it holds."""
    out = []
    for outcome in outcomes:
        position = outcome.position
        if outcome.status not in _HELD or outcome.document_id is None or position not in owners:
            continue
        looked = seen.get(position)
        if looked is None:
            continue
        validators = looked.validators or Validators()
        out.append(
            FileState(
                source=owners[position],
                uri=looked.uri,
                document_id=outcome.document_id,
                size=looked.size,
                mtime_ns=looked.mtime_ns,
                etag=validators.etag,
                last_modified=validators.last_modified,
            )
        )
    return out
