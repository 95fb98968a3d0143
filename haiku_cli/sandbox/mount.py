"""A lazy, read-only view of the selection's documents at `/documents/{id}/` for sandboxed code.

Nothing is read up front: listing `/documents` reads ids only, and a document's database is found
(through `resolve_documents`, hence `clients_covering`) the first time one of its files is touched.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import anyio.to_thread
from pydantic_monty import MontyFileHandle
from pydantic_monty.os_access import ScanEntry, StatResult, path_from_arg

from haiku_cli.databases.pool import DatabasePool
from haiku_cli.databases.resolve import resolve_documents
from haiku_cli.databases.selection import Selection
from haiku_cli.errors import HaikuError
from haiku_cli.store import reads
from haiku_cli.store.database import Database
from haiku_cli.store.records import DocumentRecord

ROOT = "/documents"
FILES = ("metadata.json", "content.txt", "chunks.jsonl")

# The OS calls that name a path; everything else (clocks, env) is not the mount's business.
PATH_CALLS = frozenset(
    {
        "open",
        "Path.exists",
        "Path.is_file",
        "Path.is_dir",
        "Path.is_symlink",
        "Path.read_text",
        "Path.read_bytes",
        "Path.iterdir",
        "Path.scan",
        "Path.stat",
        "Path.resolve",
        "Path.absolute",
        "Path.write_text",
        "Path.write_bytes",
        "Path.append_text",
        "Path.append_bytes",
        "Path.mkdir",
        "Path.unlink",
        "Path.rmdir",
        "Path.rename",
    }
)
_WRITES = frozenset(name for name in PATH_CALLS if name.split(".")[-1].startswith(("write", "append")))
_WRITES |= {"Path.mkdir", "Path.unlink", "Path.rmdir", "Path.rename"}


@dataclass(frozen=True)
class _Place:
    """Where a normalised path points: the root, /documents, a document directory or one of its files."""

    kind: str  # "root" | "documents" | "document" | "file"
    path: str
    document_id: str | None = None
    file: str | None = None


class DocumentMount:
    """Answers the sandbox's filesystem calls from the selection's databases, never writing anything."""

    def __init__(
        self, pool: DatabasePool, selection: Selection, *, document_filter: str | None = None
    ) -> None:
        self._pool = pool
        self._selection = selection
        self._filter = document_filter
        self._ids: list[str] | None = None
        # id -> (database name, record without content); None when the selection does not hold it.
        self._resolved: dict[str, tuple[str, DocumentRecord] | None] = {}

    async def handle(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Answer one path call (a name in `PATH_CALLS`); raise the exception the sandbox should see."""
        try:
            return await self._dispatch(name, args, kwargs)
        except HaikuError as exc:
            # A database failing underneath is an I/O error from the program's point of view.
            raise OSError(str(exc)) from exc

    async def _dispatch(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        place = _locate(path_from_arg(args[0]))
        if name in _WRITES or (name == "open" and _writes(args[1] if len(args) > 1 else "r")):
            if place.kind in ("root", "outside"):
                raise PermissionError(f"no host filesystem here: cannot write {place.path!r}")
            raise PermissionError(f"read-only: {ROOT} is mounted read-only, cannot write {place.path!r}")
        if name in ("Path.resolve", "Path.absolute"):
            return place.path
        if name == "Path.is_symlink":
            return False
        if name == "Path.exists":
            return await self._kind(place) is not None
        if name == "Path.is_file":
            return await self._kind(place) == "file"
        if name == "Path.is_dir":
            return await self._kind(place) == "dir"
        if name == "open":
            await self._require_file(place)
            return MontyFileHandle(place.path, args[1] if len(args) > 1 else "r")
        if name == "Path.read_text":
            return await self._read(place)
        if name == "Path.read_bytes":
            return (await self._read(place)).encode("utf-8")
        if name == "Path.iterdir":
            return [PurePosixPath(place.path, child) for child in await self._listdir(place)]
        if name == "Path.stat":
            if await self._kind(place) == "dir":
                return StatResult.dir_stat(0o555)
            return StatResult.file_stat(len((await self._read(place)).encode("utf-8")), 0o444)
        if name == "Path.scan":
            return await self._scan(place, kwargs.get("max_depth"))
        raise PermissionError(f"operation {name} is not available in this sandbox")

    async def _kind(self, place: _Place) -> str | None:
        """'dir', 'file' or None (missing); paths outside the mount are refused, not reported missing."""
        if place.kind in ("root", "documents"):
            return "dir"
        _deny_outside(place)
        if await self._document(place.document_id) is None:
            return None
        if place.kind == "document":
            return "dir"
        return "file" if place.file in FILES else None

    async def _require_file(self, place: _Place) -> None:
        kind = await self._kind(place)
        if kind is None:
            raise FileNotFoundError(f"[Errno 2] No such file or directory: {place.path!r}")
        if kind == "dir":
            raise IsADirectoryError(f"[Errno 21] Is a directory: {place.path!r}")

    async def _listdir(self, place: _Place) -> list[str]:
        if place.kind == "root":
            return [ROOT.lstrip("/")]
        if place.kind == "documents":
            return await self.document_ids()
        kind = await self._kind(place)
        if kind is None:
            raise FileNotFoundError(f"[Errno 2] No such file or directory: {place.path!r}")
        if kind == "file":
            raise NotADirectoryError(f"[Errno 20] Not a directory: {place.path!r}")
        return list(FILES)

    async def _scan(self, place: _Place, max_depth: int | None) -> list[ScanEntry]:
        """The subtree for os.walk / Path.glob; documents listed by id are known directories, not resolved."""
        kind = await self._kind(place)
        if kind is None:
            raise FileNotFoundError(f"[Errno 2] No such file or directory: {place.path!r}")
        entries = [ScanEntry("", kind == "dir", kind == "file", False)]
        if kind == "file" or max_depth == 0:
            return entries
        depth = {"root": 0, "documents": 1, "document": 2}[place.kind]
        stack: list[tuple[str, int]] = [("", depth)]
        while stack:
            relative, level = stack.pop()
            if max_depth is not None and level - depth >= max_depth:
                continue
            if level == 0:
                children, is_dir = [ROOT.lstrip("/")], True
            elif level == 1:
                children, is_dir = await self.document_ids(), True
            else:
                children, is_dir = list(FILES), False
            for child in children:
                rel = f"{relative}/{child}" if relative else child
                entries.append(ScanEntry(rel, is_dir, not is_dir, False))
                if is_dir:
                    stack.append((rel, level + 1))
        return entries

    async def document_ids(self) -> list[str]:
        """Every id in the selection (matching the filter), each once, in selection order; read once."""
        if self._ids is None:
            dbs = await self._pool.clients_covering(self._selection)
            seen: dict[str, None] = {}
            for db in dbs:
                ids = await anyio.to_thread.run_sync(lambda db=db: reads.document_ids(db, where=self._filter))
                seen.update(dict.fromkeys(ids))
            self._ids = list(seen)
        return self._ids

    async def _document(self, document_id: str | None) -> tuple[str, DocumentRecord] | None:
        """The database holding an id and its record, resolved once; ambiguity is an error, never a guess."""
        assert document_id is not None
        if document_id not in self._resolved:
            res = await resolve_documents(self._pool, self._selection, [document_id])
            if document_id in res.ambiguous:
                names = res.ambiguous[document_id]
                raise OSError(
                    f"document id {document_id} is held by more than one selected database "
                    f"({' and '.join(repr(n) for n in names)}); one was probably copied from the other, "
                    "so haiku will not guess which is meant. Ask about one of them at a time."
                )
            found = res.found.get(document_id)
            if found is not None and self._filter and not await self._matches_filter(found[0], document_id):
                found = None
            self._resolved[document_id] = found
        return self._resolved[document_id]

    async def _matches_filter(self, database: str, document_id: str) -> bool:
        db = await self._database(database)
        where = f"id = {reads.sql_string(document_id)} AND ({self._filter})"
        return bool(await anyio.to_thread.run_sync(lambda: reads.document_ids(db, where=where)))

    async def _database(self, name: str) -> Database:
        dbs = await self._pool.clients_covering(self._selection)
        return next(db for db in dbs if db.name == name)

    async def _read(self, place: _Place) -> str:
        await self._require_file(place)
        found = await self._document(place.document_id)
        assert found is not None and place.document_id is not None
        database, record = found
        if place.file == "metadata.json":
            return json.dumps(_metadata(database, record), ensure_ascii=False, indent=2) + "\n"
        db = await self._database(database)
        document_id = place.document_id
        if place.file == "content.txt":
            full = await anyio.to_thread.run_sync(lambda: reads.get_document(db, document_id))
            return full.content if full is not None else ""
        chunks = await anyio.to_thread.run_sync(lambda: reads.chunks_of(db, document_id))
        lines = [
            json.dumps({"database": database, **chunk.model_dump(mode="json")}, ensure_ascii=False)
            for chunk in chunks
        ]
        return "".join(line + "\n" for line in lines)


def _metadata(database: str, record: DocumentRecord) -> dict[str, Any]:
    return {"database": database, **record.model_dump(mode="json", exclude={"content", "content_hash"})}


def _writes(mode: str) -> bool:
    return any(c in mode for c in "wax+")


def _locate(path: PurePosixPath) -> _Place:
    """Normalise a sandbox path (so `..` cannot climb out) and say what it points at."""
    text = posixpath.normpath(posixpath.join("/", str(path)))
    text = "/" + text.lstrip("/")  # normpath keeps a leading '//'
    if text == "/":
        return _Place("root", text)
    if text == ROOT:
        return _Place("documents", text)
    if not text.startswith(ROOT + "/"):
        return _Place("outside", text)
    parts = text[len(ROOT) + 1 :].split("/")
    if len(parts) == 1:
        return _Place("document", text, parts[0])
    if len(parts) == 2:
        return _Place("file", text, parts[0], parts[1])
    return _Place("file", text, parts[0], "/".join(parts[1:]))


def _deny_outside(place: _Place) -> None:
    if place.kind == "outside":
        raise PermissionError(
            f"no host filesystem here: {place.path!r} is not readable; only {ROOT}/ is (read-only)"
        )
