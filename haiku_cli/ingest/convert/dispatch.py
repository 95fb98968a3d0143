"""Pick a registered converter by file suffix, content type or the bytes themselves; refuse empty results."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePath, PurePosixPath
from urllib.parse import quote_from_bytes, unquote, urlsplit

import haiku_cli.ingest.convert.formats  # noqa: F401  (registers every format)
from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert import registry
from haiku_cli.ingest.convert.limits import over_limit
from haiku_cli.ingest.convert.markdown import convert_markdown
from haiku_cli.ingest.convert.registry import RawDocument
from haiku_cli.ingest.convert.text import normalize_newlines
from haiku_cli.ingest.document import ConversionError, ConvertedDocument

SUPPORTED_SUFFIXES: frozenset[str] = registry.suffixes()
"""Lower-case suffixes convert_file accepts; files without any suffix are read as plain text too."""

_GENERIC_MIMES = {"", "application/octet-stream", "binary/octet-stream", "application/x-download"}
_TITLE_CHARS = 80


def suffix_kind(path: PurePath | str) -> str | None:
    """The converter's name for a path's suffix ("text" when it has none), or None when unsupported."""
    pure = path if isinstance(path, PurePath) else PurePosixPath(path)
    if pure.suffix == "":
        return "text"
    found = registry.by_suffix(pure)
    return None if found is None else found.name


def convert_file(
    path: Path, limits: IngestSettings | None = None, *, as_text: bool = False
) -> ConvertedDocument:
    """Convert a local file chosen by its suffix; raise ConversionError naming the file and the problem.

    A file larger than `limits.max_file_mb` is refused before it is read; `as_text` reads a file whose
    suffix is not supported as plain text.
    """
    limits = limits or IngestSettings()
    label = str(path)
    kind = suffix_kind(path) or ("text" if as_text else None)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ConversionError(f"{label}: no such file") from None
    except OSError as exc:  # a path too long, a permission error on a folder above, a symlink loop
        raise ConversionError(f"{label}: cannot read ({exc.strerror or exc})") from exc
    if stat.S_ISDIR(info.st_mode):
        raise ConversionError(f"{label}: is a directory")
    if kind is None:
        hint = registry.hint_for(path)
        raise ConversionError(
            f"{label}: unsupported file type {path.suffix}" + (f" ({hint})" if hint else "")
        )
    if not stat.S_ISREG(info.st_mode):
        # Opening a FIFO or a device would wait for a writer, or read forever.
        raise ConversionError(f"{label}: not a regular file")
    key, limit_mb = byte_limit(kind, limits)
    limit = int(limit_mb * 2**20)
    if info.st_size > limit:
        raise ConversionError(over_limit(label, info.st_size, key, limit_mb))
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)  # the file may have grown since it was measured
    except OSError as exc:
        raise ConversionError(f"{label}: cannot read ({exc.strerror or exc})") from exc
    if len(data) > limit:
        raise ConversionError(over_limit(label, len(data), key, limit_mb))
    return convert_kind(
        data, kind, label=label, uri=file_uri(path), fallback_title=path.stem or path.name, limits=limits
    )


def file_uri(path: Path | str) -> str:
    """The uri a local file's document is stored under (its absolute path, symlinks not resolved)."""
    absolute = os.path.abspath(path)
    if os.name != "posix":
        return Path(absolute).as_uri()
    # What Path.as_uri() makes of an absolute POSIX path, without building a Path (a sync makes one per file).
    return "file://" + quote_from_bytes(os.fsencode(absolute))


def convert_text(text: str, *, title: str | None = None, uri: str = "") -> ConvertedDocument:
    """Convert text given directly (read as markdown); untitled text is titled by its H1 or first line."""
    if not text.strip():
        raise ConversionError("the text is empty")
    doc = convert_markdown(normalize_newlines(text), uri=uri, fallback_title=None)
    guess = title or doc.title or _first_line(doc.text)
    return ConvertedDocument(uri=uri, title=guess, segments=doc.segments)


def convert_bytes(
    data: bytes, *, uri: str, content_type: str | None, limits: IngestSettings | None = None
) -> ConvertedDocument:
    """Convert downloaded or read bytes, by content type, else the URI's suffix, else by sniffing."""
    mime, charset = _parse_content_type(content_type)
    label = _label(uri)
    kind = _kind_for(data, mime, uri)
    if kind is None:
        raise ConversionError(f"{label}: unsupported content type {mime}")
    return convert_kind(
        data, kind, label=label, uri=uri, fallback_title=_uri_title(uri), charset=charset, limits=limits
    )


def convert_kind(
    data: bytes,
    kind: str,
    *,
    label: str,
    uri: str,
    fallback_title: str | None,
    charset: str | None = None,
    limits: IngestSettings | None = None,
) -> ConvertedDocument:
    """Convert bytes already read as a converter kind ("pdf", "markdown", ...); refuse an empty result."""
    if not data.strip():
        raise ConversionError(f"{label} is empty")
    limits = limits or IngestSettings()
    raw = RawDocument(data, label, uri, fallback_title, limits=limits, charset=charset)
    doc = registry.converter(kind).read(raw)
    if not doc.text.strip():
        raise ConversionError(f"{label} is empty")
    if len(doc.text) > limits.max_text_mb * 2**20:
        size = len(doc.text)
        raise ConversionError(over_limit(label, size, "max_text_mb", limits.max_text_mb, "text of "))
    return doc


def byte_limit(kind: str, limits: IngestSettings) -> tuple[str, float]:
    """The setting and size in MB that bound reading a file of this kind (before it is read)."""
    # Text files hold about as many characters as bytes, so the text limit applies before reading.
    if registry.converter(kind).text and limits.max_text_mb < limits.max_file_mb:
        return "max_text_mb", limits.max_text_mb
    return "max_file_mb", limits.max_file_mb


def _kind_for(data: bytes, mime: str, uri: str) -> str | None:
    by_suffix = suffix_kind(urlsplit(uri).path) if uri else None
    named = registry.by_media_type(mime)
    if named is not None:
        return named.name
    if mime.startswith("text/"):
        # Servers send .md and .rst as text/plain; the suffix knows better.
        return by_suffix if by_suffix is not None and registry.converter(by_suffix).text else "text"
    if mime not in _GENERIC_MIMES:
        return None
    sniffed = registry.by_sniffing(data)
    if sniffed is not None:
        return sniffed.name
    return by_suffix or "text"


def _parse_content_type(content_type: str | None) -> tuple[str, str | None]:
    if not content_type:
        return "", None
    mime, _, params = content_type.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return mime.strip().lower(), charset


def _label(uri: str) -> str:
    if uri.startswith("file://"):
        return unquote(urlsplit(uri).path)
    return uri or "the input"


def _uri_title(uri: str) -> str | None:
    parts = urlsplit(uri)
    name = PurePosixPath(unquote(parts.path)).name
    return PurePosixPath(name).stem or name or parts.hostname or None


def _first_line(text: str) -> str | None:
    for line in text.splitlines():
        line = " ".join(line.lstrip("#>*-+ \t").split())
        if line:
            return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1].rstrip() + "…"
    return None
