"""Whether a stored document's source file is as it was read: the cheap look a search makes per hit.

Here, below ingest, so that a search's check of its hits' files loads none of the ingest path: only a
source whose size or time moved is read again (ingest's converters), and only a URL or object is asked
about through its kind.
"""

from __future__ import annotations

import os
import stat as stat_mode
from enum import StrEnum
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from haiku_cli.store.source_tables import FileState


class Freshness(StrEnum):
    """Whether a stored document's source is as it was when it was read."""

    FRESH = "fresh"
    CHANGED = "changed"  # size/time, or the content hash when those moved, differ from what was stored
    MISSING = "missing"  # gone, or no longer a file
    UNKNOWN = "unknown"  # not checked (a remote source unless asked), or it could not be looked at


def path_of(uri: str) -> str:
    """The local path a `file://` uri names."""
    return unquote(urlsplit(uri).path, errors="surrogateescape")


def by_stat(state: FileState) -> Freshness:
    """A local file's state by its size and time alone: `changed` here means its content is to be compared."""
    try:
        found = os.stat(path_of(state.uri))
    except FileNotFoundError:
        return Freshness.MISSING
    except OSError:
        return Freshness.UNKNOWN  # unreadable, or on a mount that vanished
    if not stat_mode.S_ISREG(found.st_mode):
        return Freshness.MISSING  # a directory now, or a device: no longer the file stored
    if state.size is not None and (found.st_size, found.st_mtime_ns) == (state.size, state.mtime_ns):
        return Freshness.FRESH
    return Freshness.CHANGED
