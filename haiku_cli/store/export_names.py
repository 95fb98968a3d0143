"""The names a deferred module's code binds (store/lance_import.py), kept per file version in the user cache.

Reading them means parsing the module's source: about 0.04 CPU-seconds for the modules LanceDB's import
defers (`lancedb.functions` alone is 2,000 lines), paid by every fresh process. The result depends only on
the file, so it is kept in `exports.json` under the user cache folder, keyed by the file's path, size and
modification time and the Python version; a file that changed, or a cache that cannot be read, parsed or
written, means the source is parsed again, exactly as without the cache. Writes are atomic (a temporary
file renamed into place), so processes starting at once never read half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

CACHE_ENV = "HAIKU_CACHE_DIR"  # the folder instead of the platform's user cache folder (tests)
FILE_NAME = "exports.json"
_FORMAT = 1


def cache_file() -> str:
    """Where the names are kept: `HAIKU_CACHE_DIR`, else the platform's user cache folder for haiku."""
    folder = os.environ.get(CACHE_ENV)
    if not folder:
        import platformdirs

        folder = platformdirs.user_cache_dir("haiku")
    return os.path.join(folder, FILE_NAME)


class ExportCache:
    """The kept names, read once; `save` writes back what was parsed since, if anything."""

    def __init__(self) -> None:
        self.path = cache_file()
        self.entries: dict[str, Any] = {}
        self.changed = False
        with contextlib.suppress(OSError, ValueError):
            with open(self.path, encoding="utf-8") as f:
                found = json.load(f)
            if isinstance(found, dict) and found.get("format") == _FORMAT:
                entries = found.get("modules")
                self.entries = entries if isinstance(entries, dict) else {}

    def names(self, name: str, origin: str, parse: Callable[[], dict[str, str]]) -> dict[str, str]:
        """Module `name`'s names as `parse` reads them from `origin`, from the cache when the file is the
        one they were read from."""
        st = os.stat(origin)
        key = f"{name}:{origin}"
        stamp = [st.st_size, st.st_mtime_ns, sys.version]
        kept = self.entries.get(key)
        if isinstance(kept, dict) and kept.get("stamp") == stamp and _is_names(kept.get("names")):
            return dict(kept["names"])
        found = parse()
        self.entries[key] = {"stamp": stamp, "names": found}
        self.changed = True
        return found

    def save(self) -> None:
        """Write the names back when any were parsed; a folder that cannot be written is left alone."""
        if not self.changed:
            return
        # Files gone (an upgraded package, a test's temporary module) are dropped: the cache stays small.
        self.entries = {k: v for k, v in self.entries.items() if os.path.exists(k.partition(":")[2])}
        folder = os.path.dirname(self.path)
        with contextlib.suppress(OSError):
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=folder, prefix=".exports-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"format": _FORMAT, "modules": self.entries}, f)
                os.replace(temporary, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        self.changed = False


def _is_names(value: object) -> bool:
    return isinstance(value, dict) and all(type(k) is str and type(v) is str for k, v in value.items())
