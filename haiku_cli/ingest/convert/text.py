"""Plain text: decoding with clear refusals for binary data and invalid UTF-8."""

from __future__ import annotations

import codecs
from dataclasses import replace

from haiku_cli.ingest.convert.registry import Converter, RawDocument
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment

_SNIFF_BYTES = 8192
# Control characters that never occur in real text; tab, newlines and form feed are fine.
_CONTROL = bytes(c for c in range(32) if c not in (9, 10, 12, 13))


def looks_binary(data: bytes) -> bool:
    """Whether the first bytes look like binary data rather than text (NULs or many control bytes)."""
    head = data[:_SNIFF_BYTES]
    if not head:
        return False
    if b"\x00" in head:
        return True
    controls = len(head) - len(head.translate(None, _CONTROL))
    return controls / len(head) > 0.05


def decode_text(data: bytes, label: str, charset: str | None = None, notes: list[str] | None = None) -> str:
    """Decode `data` as text (UTF-8 unless a charset or BOM says otherwise), with newlines normalized.

    Undeclared text that is not UTF-8 is read as Windows-1252/Latin-1, the usual older encoding, and
    a note saying so is appended to `notes`.
    """
    # UTF-16 has NULs all over, so its BOM has to be honoured before the binary sniff.
    for bom, encoding in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            return _decode(data[len(bom) :], encoding, label)
    if data.startswith(codecs.BOM_UTF8):
        data, charset = data[len(codecs.BOM_UTF8) :], "utf-8"
    if looks_binary(data):
        raise ConversionError(f"{label}: binary data, not text")
    declared = _known_encoding(charset)
    if declared is None and notes is not None:
        try:
            return normalize_newlines(data.decode("utf-8"))
        except UnicodeDecodeError:
            notes.append(f"{label}: not UTF-8; read as Latin-1 (Windows-1252)")
            return normalize_newlines(_latin(data))
    return _decode(data, declared or "utf-8", label)


def _latin(data: bytes) -> str:
    # cp1252 is what "Latin-1" files usually are; its five undefined bytes fall back to ISO-8859-1.
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _known_encoding(charset: str | None) -> str | None:
    if not charset:
        return None
    try:
        return codecs.lookup(charset.strip().strip("\"'")).name
    except LookupError:
        return None


def _decode(data: bytes, encoding: str, label: str) -> str:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        name = "UTF-8" if encoding in ("utf-8", "utf8") else encoding
        raise ConversionError(f"{label}: not {name} text") from None
    return normalize_newlines(text)


def normalize_newlines(text: str) -> str:
    """Use \\n line ends only; form feeds become line breaks because stored PDFs use them as page breaks."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")


def convert_plain(text: str, *, uri: str, title: str | None) -> ConvertedDocument:
    """Wrap already-decoded plain text as a one-segment document."""
    segment = Segment(text.strip("\n"), line=first_line(text))
    return ConvertedDocument(uri=uri, title=title, segments=[segment])


def first_line(text: str) -> int:
    """The line (1-based) `text.strip("\\n")` starts on in `text`."""
    return 1 + len(text) - len(text.lstrip("\n"))


def read_text(raw: RawDocument) -> ConvertedDocument:
    """A plain text file as one segment titled by its fallback (its file name)."""
    notes: list[str] = []
    text = decode_text(raw.data, raw.label, raw.charset, notes)
    return replace(convert_plain(text, uri=raw.uri, title=raw.fallback_title), notes=tuple(notes))


# Also the converter of files without a suffix, of `--include`d unknown suffixes and of any other text/*.
CONVERTER = Converter(name="text", read=read_text, suffixes=(".txt", ".text", ".log"), text=True)
