"""A read-only view of the selection's documents at `/documents/{id}/` for sandboxed code.

The files are made on demand from the catalog; nothing is read until a program looks, and nothing can
be written. Paths are normalised first, so `..` cannot climb out of the view.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pydantic_monty import MontyFileHandle
from pydantic_monty.os_access import ScanEntry, StatResult, path_from_arg

from haiku_cli.errors import HaikuError
from haiku_cli.sandbox.catalog import DocumentCatalog
from haiku_cli.store.records import DocumentRecord, PictureInfo

ROOT = "/documents"
FILES = ("metadata.json", "content.txt", "chunks.jsonl", "pictures.json")
PICTURES = "pictures"  # a document's folder of picture files, `{reference}.png` or `.jpg`
_SUFFIXES = {"png": ".png", "jpeg": ".jpg"}

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
    """Answers the sandbox's filesystem calls from the catalog, never writing anything."""

    def __init__(self, catalog: DocumentCatalog) -> None:
        self.catalog = catalog

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
            picture = await self._picture_bytes(place)
            return picture if picture is not None else (await self._read(place)).encode("utf-8")
        if name == "Path.iterdir":
            return [PurePosixPath(place.path, child) for child in await self._listdir(place)]
        if name == "Path.stat":
            if await self._kind(place) == "dir":
                return StatResult.dir_stat(0o555)
            info = await self._picture_info(place)
            if info is not None:
                return StatResult.file_stat(info.size, 0o444)
            return StatResult.file_stat(len((await self._read(place)).encode("utf-8")), 0o444)
        if name == "Path.scan":
            return await self._scan(place, kwargs.get("max_depth"))
        raise PermissionError(f"operation {name} is not available in this sandbox")

    async def _kind(self, place: _Place) -> str | None:
        """'dir', 'file' or None (missing); paths outside the mount are refused, not reported missing."""
        if place.kind in ("root", "documents"):
            return "dir"
        _deny_outside(place)
        assert place.document_id is not None
        if await self.catalog.find(place.document_id) is None:
            return None
        if place.kind == "document" or place.file == PICTURES:
            return "dir"
        if place.file in FILES:
            return "file"
        return "file" if await self._picture_info(place) is not None else None

    async def _picture_info(self, place: _Place) -> PictureInfo | None:
        """The picture a `pictures/{reference}.{suffix}` path names, if its document has it."""
        folder, _, name = (place.file or "").partition("/")
        if folder != PICTURES or not name:
            return None
        found = await self.catalog.find(place.document_id or "")
        if found is None:
            return None
        for info in await self.catalog.pictures(found[0], found[1].id):
            if picture_file(info) == name:
                return info
        return None

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
            return await self.catalog.document_ids()
        kind = await self._kind(place)
        if kind is None:
            raise FileNotFoundError(f"[Errno 2] No such file or directory: {place.path!r}")
        if kind == "file":
            raise NotADirectoryError(f"[Errno 20] Not a directory: {place.path!r}")
        if place.kind == "file":  # the pictures folder
            return await self._picture_files(place)
        return [*FILES, PICTURES]

    async def _picture_files(self, place: _Place) -> list[str]:
        found = await self.catalog.find(place.document_id or "")
        return (
            []
            if found is None
            else [picture_file(p) for p in await self.catalog.pictures(found[0], found[1].id)]
        )

    async def _picture_bytes(self, place: _Place) -> bytes | None:
        info = await self._picture_info(place)
        if info is None:
            return None
        found = await self.catalog.find(info.document_id)
        record = await self.catalog.picture(found[0], info.document_id, info.reference) if found else None
        return record.data if record is not None else None

    async def _scan(self, place: _Place, max_depth: int | None) -> list[ScanEntry]:
        """The subtree for os.walk / Path.glob; listed documents are known directories, not resolved."""
        kind = await self._kind(place)
        if kind is None:
            raise FileNotFoundError(f"[Errno 2] No such file or directory: {place.path!r}")
        entries = [ScanEntry("", kind == "dir", kind == "file", False)]
        if kind == "file" or max_depth == 0:
            return entries
        depth = {"root": 0, "documents": 1, "document": 2, "file": 3}[place.kind]
        stack: list[tuple[str, int]] = [("", depth)]
        while stack:
            relative, level = stack.pop()
            if max_depth is not None and level - depth >= max_depth:
                continue
            if level == 0:
                children = [(ROOT.lstrip("/"), True)]
            elif level == 1:
                children = [(i, True) for i in await self.catalog.document_ids()]
            elif level == 2:
                children = [*((f, False) for f in FILES), (PICTURES, True)]
            else:  # a document's pictures folder
                folder = _locate(PurePosixPath(place.path, relative))
                children = [(f, False) for f in await self._picture_files(folder)]
            for child, is_dir in children:
                rel = f"{relative}/{child}" if relative else child
                entries.append(ScanEntry(rel, is_dir, not is_dir, False))
                if is_dir:
                    stack.append((rel, level + 1))
        return entries

    async def _read(self, place: _Place) -> str:
        await self._require_file(place)
        assert place.document_id is not None
        found = await self.catalog.find(place.document_id)
        assert found is not None
        database, record = found
        if place.file == "metadata.json":
            return json.dumps(_metadata(database, record), ensure_ascii=False, indent=2) + "\n"
        if place.file == "content.txt":
            return await self.catalog.content(database, record.id)
        if place.file == "pictures.json":
            pictures = await self.catalog.pictures(database, record.id)
            listed = [{**p.model_dump(mode="json"), "path": picture_path(p)} for p in pictures]
            return json.dumps(listed, ensure_ascii=False, indent=2) + "\n"
        if place.file != "chunks.jsonl":
            raise ValueError(f"{place.path!r} is a picture: read it with read_bytes()")
        chunks = await self.catalog.chunks(database, record.id)
        lines = [
            json.dumps({"database": database, **chunk.model_dump(mode="json")}, ensure_ascii=False)
            for chunk in chunks
        ]
        return "".join(line + "\n" for line in lines)


def picture_file(info: PictureInfo) -> str:
    """A picture's file name in its document's `pictures` folder."""
    return f"{info.reference}{_SUFFIXES.get(info.format, '.png')}"


def picture_path(info: PictureInfo) -> str:
    """A picture's path in the sandbox."""
    return f"{ROOT}/{info.document_id}/{PICTURES}/{picture_file(info)}"


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
