"""The kinds of source haiku reads, in the order they are asked whether a source is theirs.

Adding a kind (a git repository, say) is one module implementing `Kind` (kinds/base.py) and one line
here, before `LocalPaths`, which takes every source no other kind claims.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haiku_cli.ingest.kinds.base import Freshness, Kind, Reading, Seen
from haiku_cli.ingest.kinds.local import LocalPaths, documents_by_content
from haiku_cli.ingest.kinds.object_storage import ObjectStorage
from haiku_cli.ingest.kinds.web import WebPages
from haiku_cli.ingest.objects import ObjectFile
from haiku_cli.ingest.source_walk import TextFile, display_path
from haiku_cli.store.source_state import by_stat, path_of

if TYPE_CHECKING:
    from haiku_cli.config.settings import IngestSettings
    from haiku_cli.ingest.document import ConvertedDocument
    from haiku_cli.store.source_tables import FileState

KINDS: tuple[Kind, ...] = (WebPages(), ObjectStorage(), LocalPaths())

# What an add reads, one of each kind's items: a URL, a file, a file of another suffix read as text, an
# object on object storage.
Item = str | Path | TextFile | ObjectFile

_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)

__all__ = [
    "KINDS",
    "Freshness",
    "Item",
    "Kind",
    "Reading",
    "freshness",
    "item_kind",
    "kind_of",
    "unread_scheme",
]


def kind_of(source: str) -> Kind:
    """The kind of a source argument, a remembered source or a stored uri."""
    return next(kind for kind in KINDS if kind.claims(source))


def item_kind(item: object) -> Kind:
    """The kind an item of an add belongs to."""
    for kind in KINDS:
        if kind.holds(item):
            return kind
    raise TypeError(f"no kind of source holds {type(item).__name__}")


def unread_scheme(source: str) -> str | None:
    """Why `source` (after `as_source`) cannot be added: an address of a kind haiku does not read (`ftp://`)."""
    if not _SCHEME.match(source) or kind_of(source) is not KINDS[-1]:
        return None
    if os.path.lexists(source):
        return None  # a local folder that happens to be named `ftp:`
    where = " names a file on another host;" if source.lower().startswith("file://") else ""
    named = [KINDS[-1].described, *(k.described for k in KINDS[:-1])]
    return f"{display_path(source)}:{where} haiku reads only {', '.join(named[:-1])} and {named[-1]}"


def read_item(item: Any, reading: Reading, fetched: Any | None = None) -> tuple[Seen, ConvertedDocument]:
    """Read and convert one item of any kind (see `Kind.read`)."""
    return item_kind(item).read(item, reading, fetched)


def freshness(
    state: FileState, content_hash: str | None = None, limits: IngestSettings | None = None
) -> Freshness:
    """Whether the source of a stored document changed since it was read: the cheap local check a search
    makes per hit (`state`: its remembered file state; `content_hash`: the document's, compared when the
    file's size or time moved)."""
    return kind_of(state.uri).freshness(state, content_hash, limits)


def freshness_of_documents(
    state: FileState, stored: Mapping[str, str], limits: IngestSettings | None = None
) -> dict[str, Freshness]:
    """`freshness` of each document stored from one file (by uri, its content hash: the file's own
    under "", and those read out of it), the file read at most once."""
    if not state.uri.startswith("file://"):
        # Only the file's own document is compared by content here: a part's hash is not the file's.
        return {uri: freshness(state, None if uri else digest, limits) for uri, digest in stored.items()}
    found = by_stat(state)
    if found is not Freshness.CHANGED:
        return dict.fromkeys(stored, found)
    return documents_by_content(Path(path_of(state.uri)), stored, limits)
