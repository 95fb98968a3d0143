"""The one table of formats haiku reads: each a `Converter`, found by suffix, media type or the bytes.

A new format is one module defining a `Converter` and one `register()` line in `convert.formats`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath, PurePosixPath
from typing import Protocol
from urllib.parse import unquote, urlsplit

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.document import ConvertedDocument


@dataclass(frozen=True)
class RawDocument:
    """The bytes of one source and how to name it: what every converter's `read` is given.

    `label` names the source in messages (a path or a URL); `fallback_title` is used when the document
    names none; `charset` is what the server or caller declared, if anything.
    """

    data: bytes
    label: str
    uri: str
    fallback_title: str | None
    limits: IngestSettings = field(default_factory=IngestSettings)
    charset: str | None = None


Read = Callable[[RawDocument], ConvertedDocument]


class ConvertBytes(Protocol):
    """A format's conversion of a source's bytes, named and bounded as `RawDocument` names and bounds them."""

    def __call__(
        self, data: bytes, *, label: str, uri: str, fallback_title: str | None, limits: IngestSettings
    ) -> ConvertedDocument: ...


def reading(convert: ConvertBytes) -> Read:
    """The `read` of a format whose conversion needs the bytes, their names and the limits, nothing else."""

    def read(raw: RawDocument) -> ConvertedDocument:
        return convert(
            raw.data, label=raw.label, uri=raw.uri, fallback_title=raw.fallback_title, limits=raw.limits
        )

    return read


@dataclass(frozen=True)
class Converter:
    """One format: how its files are recognised and the function that reads them.

    `suffixes` are lower-case with their dot (".pdf"); `media_types` are content types without
    parameters ("application/pdf"); `sniff` tells the format from the first bytes when neither names
    it. `text`: the file is text, so `[ingest] max_text_mb` bounds it before it is read and a server's
    `text/plain` does not hide it. `read` raises ConversionError with a one-line reason for a file it
    cannot read; it loads heavy libraries itself, when first called.

    `available`: whether the format can be read here (an optional extra installed); when it says no,
    its files are unsupported, and their refusal adds `hint` (what to install).

    `mistaken`: for a suffix two kinds of file share (`.ts`: TypeScript, and MPEG transport stream
    video), what the first `SNIFF_BYTES` hold instead when they are not this format, else None; such a
    file is unsupported. Only files of a converter that has it are sniffed.
    """

    name: str
    read: Read
    suffixes: tuple[str, ...] = ()
    media_types: tuple[str, ...] = ()
    sniff: Callable[[bytes], bool] | None = None
    text: bool = False
    available: Callable[[], bool] | None = None
    hint: str = ""
    mistaken: Callable[[bytes], str | None] | None = None

    def usable(self) -> bool:
        """Whether this format can be read here."""
        return self.available is None or self.available()


SNIFF_BYTES = 1024
"""How many first bytes of a file a converter's `mistaken` is given."""

_BY_NAME: dict[str, Converter] = {}
_BY_SUFFIX: dict[str, Converter] = {}
_BY_MEDIA_TYPE: dict[str, Converter] = {}


def register(converter: Converter) -> None:
    """Add a format; a suffix or media type already taken by another converter is an error."""
    if converter.name in _BY_NAME and _BY_NAME[converter.name] is not converter:
        raise ValueError(f"a converter named {converter.name!r} is already registered")
    for key, table in [(s, _BY_SUFFIX) for s in converter.suffixes] + [
        (m, _BY_MEDIA_TYPE) for m in converter.media_types
    ]:
        taken = table.get(key)
        if taken is not None and taken is not converter:
            raise ValueError(f"{key} is already read by the {taken.name!r} converter")
    _BY_NAME[converter.name] = converter
    _BY_SUFFIX.update(dict.fromkeys(converter.suffixes, converter))
    _BY_MEDIA_TYPE.update(dict.fromkeys(converter.media_types, converter))


def converter(name: str) -> Converter:
    """The converter registered under `name` (KeyError when there is none)."""
    return _BY_NAME[name]


def by_suffix(path: PurePath | str) -> Converter | None:
    """The converter for a path's suffix (lower-cased), or None when no format here reads it."""
    found = _BY_SUFFIX.get(_suffix(path))
    return found if found is not None and found.usable() else None


def hint_for(path: PurePath | str) -> str:
    """What to install to read a file of this suffix, when its format needs what is missing ("" if not)."""
    found = _BY_SUFFIX.get(_suffix(path))
    return found.hint if found is not None and not found.usable() else ""


def by_media_type(mime: str) -> Converter | None:
    """The converter for a content type without its parameters, or None."""
    found = _BY_MEDIA_TYPE.get(mime)
    return found if found is not None and found.usable() else None


def by_sniffing(data: bytes) -> Converter | None:
    """The first registered converter whose `sniff` recognises the bytes, or None."""
    return next((c for c in _BY_NAME.values() if c.sniff is not None and c.usable() and c.sniff(data)), None)


def suffixes() -> frozenset[str]:
    """Every registered suffix of a format that can be read here."""
    return frozenset(s for s, c in _BY_SUFFIX.items() if c.usable())


def named_file(uri: str) -> PurePosixPath:
    """The file a document's uri stands for: the end of its path, or of its fragment when that names a path
    (a document read out of another's file: `mail.eml#attachment/app.py`)."""
    parts = urlsplit(uri)
    fragment = unquote(parts.fragment)
    return PurePosixPath(fragment if "/" in fragment else unquote(parts.path))


def _suffix(path: PurePath | str) -> str:
    return (path if isinstance(path, PurePath) else PurePosixPath(path)).suffix.lower()
