"""Which remembered source each item of an add belongs to, and what its file or URL was when it was read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from haiku_cli.ingest.convert.url import Validators
from haiku_cli.ingest.kinds import kind_of
from haiku_cli.ingest.kinds.base import Seen
from haiku_cli.ingest.reports import SourceOutcome
from haiku_cli.ingest.source_walk import FileChoice
from haiku_cli.store.source_tables import FileState, RememberedSource, SourceKind

__all__ = ["Seen", "remembered", "source_key", "states_of"]

# The outcomes whose document stands for its file once the add is done.
_HELD = ("added", "updated", "unchanged")


def source_key(source: str) -> str:
    """How a source given to `add-src` is remembered (a URL or `s3://` address as it is, a path made
    absolute, not resolved): as its kind says."""
    return kind_of(source).key(source)


def remembered(
    source: str,
    *,
    title: str | None,
    metadata: dict[str, Any],
    follow_symlinks: bool,
    kind: SourceKind,
    choice: FileChoice | None = None,
) -> RememberedSource:
    """The record of a source being added now, with the options it is added with (`kind`: as its listing
    found it)."""
    return RememberedSource(
        source=source_key(source),
        kind=kind,
        title=title,
        metadata=metadata,
        follow_symlinks=follow_symlinks,
        include=list(choice.include) if choice else [],
        exclude=list(choice.exclude) if choice else [],
    )


def states_of(
    outcomes: Iterable[SourceOutcome], owners: Mapping[int, str], seen: Mapping[int, Seen]
) -> list[FileState]:
    """The file states an add leaves: one per item of a remembered source whose document it holds."""
    out = []
    for outcome in outcomes:
        position = outcome.position
        if (
            outcome.status not in _HELD
            or outcome.document_id is None
            or position not in owners
            or outcome.part
        ):
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
