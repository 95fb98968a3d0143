"""Mail: a message (.eml) or a mailbox of them (.mbox); the subject a heading, the sender, recipients and
date beneath it, the body as text, each attachment haiku can read as a section of its own."""

from __future__ import annotations

import re
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import PurePosixPath

from haiku_cli.ingest.convert import registry
from haiku_cli.ingest.convert.html import convert_html
from haiku_cli.ingest.convert.registry import Converter, RawDocument
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment

_HEADERS = ("From", "To", "Cc", "Date")
# An mbox separates messages by a line "From <sender> <date>" after a blank line; writers quote body lines
# starting so as ">From ", and the date's time tells the rest of an unquoted one from a separator.
_FROM_LINE = re.compile(rb"(?:\A|(?<=\n\n))From \S+ [^\n]*\d:\d\d[^\n]*\n")
_QUOTED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)


def read_eml(raw: RawDocument) -> ConvertedDocument:
    """One message, titled by its subject."""
    message = _parse(raw.data)
    if not any(message.get(h) for h in ("From", "To", "Subject", "Date", "Message-ID")):
        raise ConversionError(f"{raw.label}: not an e-mail message (no From, To, Subject or Date header)")
    subject, text, notes = _message(message, raw, level=1)
    return ConvertedDocument(
        uri=raw.uri, title=subject or raw.fallback_title, segments=[Segment(text)], notes=notes
    )


def read_mbox(raw: RawDocument) -> ConvertedDocument:
    """Every message of a mailbox, in order, each a section titled by its subject."""
    if not raw.data.startswith(b"From "):
        raise ConversionError(f'{raw.label}: not an mbox mailbox (it does not start with a "From " line)')
    separators = list(_FROM_LINE.finditer(raw.data))
    starts = [m.end() for m in separators]
    ends = [*(m.start() for m in separators[1:]), len(raw.data)]
    segments: list[Segment] = []
    notes: tuple[str, ...] = ()
    for start, end in zip(starts, ends, strict=True):
        message = _parse(_QUOTED_FROM.sub(rb"\1", raw.data[start:end]))
        _, text, more = _message(message, raw, level=1)
        segments.append(Segment(text))
        notes += more
    return ConvertedDocument(uri=raw.uri, title=raw.fallback_title, segments=segments, notes=notes)


def _parse(data: bytes) -> EmailMessage:
    message = BytesParser(policy=policy.default).parsebytes(data)
    assert isinstance(message, EmailMessage)  # what policy.default makes
    return message


def _message(message: EmailMessage, raw: RawDocument, level: int) -> tuple[str | None, str, tuple[str, ...]]:
    """A message's subject and its Markdown: heading, headers, body, readable attachments."""
    subject = " ".join(str(message.get("Subject", "")).split()) or None
    blocks = [f"{'#' * level} {subject or '(no subject)'}"]
    headers = [f"{h}: {' '.join(str(message[h]).split())}" for h in _HEADERS if message.get(h)]
    if headers:
        blocks.append("  \n".join(headers))
    blocks.append(_body(message, raw))
    notes: list[str] = []
    for part in message.iter_attachments():
        section = _attachment(part, raw, level + 1, notes)
        if section:
            blocks.append(section)
    return subject, "\n\n".join(b for b in blocks if b.strip()), tuple(notes)


def _body(message: EmailMessage, raw: RawDocument) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError):  # an unknown charset or a broken transfer encoding
        payload = part.get_payload(decode=True)
        content = payload.decode("latin-1") if isinstance(payload, bytes) else ""
    if part.get_content_subtype() == "html":
        html = content.encode("utf-8") if isinstance(content, str) else content
        return convert_html(html, label=raw.label, uri=raw.uri, fallback_title=None, charset="utf-8").text
    return str(content).strip()


def _attachment(part: EmailMessage, raw: RawDocument, level: int, notes: list[str]) -> str:
    """An attachment of a format haiku reads, as a section headed by its file name; others are noted."""
    name = part.get_filename() or ""
    label = f"{raw.label}: attachment {name or '(unnamed)'}"
    converter = registry.by_suffix(PurePosixPath(name)) if name else None
    if converter is None or converter.name in ("eml", "mbox"):
        notes.append(f"{label}: not a format haiku reads; left out")
        return ""
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes) or not data.strip():
        notes.append(f"{label}: empty; left out")
        return ""
    try:
        doc = converter.read(RawDocument(data, label, raw.uri, PurePosixPath(name).stem, limits=raw.limits))
    except ConversionError as exc:
        notes.append(f"{exc}; left out")
        return ""
    return f"{'#' * level} Attachment: {name}\n\n{doc.text}"


EML = Converter(name="eml", read=read_eml, suffixes=(".eml",), media_types=("message/rfc822",))
MBOX = Converter(name="mbox", read=read_mbox, suffixes=(".mbox",), media_types=("application/mbox",))
