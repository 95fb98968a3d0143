"""Mail: a message (.eml) or a mailbox of them (.mbox).

A message is titled by its subject; its sender, recipients and date are shown beneath the heading and
kept as metadata (`from`, `to`, `cc`, `date`); its body is its text. Each attachment haiku can read
becomes a document of its own under `<mail uri>#attachment/<name>`, its metadata naming the mail
(`attached_to`) and the file it was read out of (`part_of`); an attached mail is read as a mail, its
own attachments beneath it, up to `MAX_DEPTH` mails deep. A mailbox is a short list of its messages;
each message is a document of its own under `<mailbox uri>#message/<key>`, with its attachments
(`...#message/<key>/attachment/<name>`); the key is a short hash of the message's Message-ID, or its
position when it has none.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from haiku_cli.ingest.convert import registry
from haiku_cli.ingest.convert.html import convert_html
from haiku_cli.ingest.convert.limits import over_limit
from haiku_cli.ingest.convert.mail_structure import Unread, parse_mail
from haiku_cli.ingest.convert.registry import Converter, RawDocument
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, Segment
from haiku_cli.store.document_parts import PART_OF

_HEADERS = ("From", "To", "Cc", "Date")
# An mbox separates messages by a line "From <sender> <date>" after a blank line; writers quote body lines
# starting so as ">From ", and the date's time tells the rest of an unquoted one from a separator.
_FROM_LINE = re.compile(rb"(?:\A|(?<=\n\n))From \S+ [^\n]*\d:\d\d[^\n]*\n")
_QUOTED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)
# A mailbox is not read inside a mail (a mail is: `_attached_mail`).
_NOT_INSIDE = ("mbox",)
MAX_DEPTH = 3
"""How many mails deep an attached mail is read (a mail in a mail in a mail); one deeper is left out, so
a crafted mail cannot make a read without end."""
# Hex digits of a Message-ID's SHA-256 naming a mailbox's message: 48 bits, no clash in any real mailbox;
# twelve characters, so never the same as a position.
_KEY_HEX = 12


@dataclasses.dataclass
class _Parts:
    """What reading one mail file gathers besides its text: the documents read out of it, and notes."""

    raw: RawDocument
    documents: list[ConvertedDocument] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    unread: list[str] = dataclasses.field(default_factory=list)  # attachments of a format not read

    def noted(self) -> tuple[str, ...]:
        if self.unread:
            count = "1 attachment" if len(self.unread) == 1 else f"{len(self.unread)} attachments"
            unread = ", ".join(self.unread)
            self.notes.append(f"{self.raw.label}: {count} left out, not in a format haiku reads: {unread}")
        return tuple(self.notes)


def read_eml(raw: RawDocument) -> ConvertedDocument:
    """One message, titled by its subject, with its readable attachments as documents of their own."""
    message, unread = _parse(raw.data)
    if not any(message.get(h) for h in ("From", "To", "Subject", "Date", "Message-ID")):
        raise ConversionError(f"{raw.label}: not an e-mail message (no From, To, Subject or Date header)")
    parts = _Parts(raw, notes=unread.notes(raw.label))
    subject, text, metadata = _message(message, raw.uri, raw.label, parts)
    return ConvertedDocument(
        uri=raw.uri,
        title=subject or raw.fallback_title,
        segments=[Segment(text)],
        notes=parts.noted(),
        metadata=metadata,
        children=tuple(parts.documents),
        owns_children=True,
    )


def read_mbox(raw: RawDocument) -> ConvertedDocument:
    """A mailbox: the list of its messages; each message (and each attachment) a document of its own."""
    if not raw.data.startswith(b"From "):
        raise ConversionError(f'{raw.label}: not an mbox mailbox (it does not start with a "From " line)')
    separators = list(_FROM_LINE.finditer(raw.data))
    starts = [m.end() for m in separators]
    ends = [*(m.start() for m in separators[1:]), len(raw.data)]
    parts = _Parts(raw)
    listed = []
    keys: set[str] = set()
    for n, (start, end) in enumerate(zip(starts, ends, strict=True), start=1):
        message, unread = _parse(_QUOTED_FROM.sub(rb"\1", raw.data[start:end]))
        key = message_key(message, n, keys)
        uri, label = f"{raw.uri}#message/{key}", f"{raw.label}#message/{key}"
        parts.notes += unread.notes(label)
        at = len(parts.documents)
        subject, text, metadata = _message(message, uri, label, parts)
        title = subject or f"{raw.fallback_title or 'mailbox'}: message {key}"
        own = ConvertedDocument(uri, title, [Segment(text)], metadata={**metadata, PART_OF: raw.uri})
        parts.documents.insert(at, own)  # before its attachments
        listed.append(
            " · ".join([f"{n}. {title}", *(str(metadata[k]) for k in ("from", "date") if k in metadata)])
        )
    heading = f"# {raw.fallback_title or 'Mailbox'}\n\n{len(listed)} messages:\n\n" + "\n".join(listed)
    return ConvertedDocument(
        uri=raw.uri,
        title=raw.fallback_title,
        segments=[Segment(heading)],
        notes=parts.noted(),
        children=tuple(parts.documents),
        owns_children=True,
    )


def message_key(message: EmailMessage, position: int, taken: set[str]) -> str:
    """A mailbox message's place in its uri: a short hash of its Message-ID, so that taking a message out
    renumbers none of the others; its position (from 1) when it has none, or one an earlier message of
    the mailbox has."""
    message_id = " ".join(str(message.get("Message-ID", "")).split())
    key = hashlib.sha256(message_id.encode("utf-8", "surrogateescape")).hexdigest()[:_KEY_HEX]
    if not message_id or key in taken:
        return str(position)
    taken.add(key)
    return key


def _parse(data: bytes, depth: int = 0) -> tuple[EmailMessage, Unread]:
    """A message (`depth` mails inside the file's), its structure bounded as it is read (a mail attached
    deeper than `MAX_DEPTH` is not parsed), and what was left out unread."""
    return parse_mail(data, mail_depth=depth, max_mail_depth=MAX_DEPTH)


def _message(
    message: EmailMessage, uri: str, label: str, parts: _Parts, depth: int = 0
) -> tuple[str | None, str, dict[str, Any]]:
    """A message's subject, its Markdown (heading, headers, body, the names of its attachments) and its
    metadata; its readable attachments join `parts` (`depth`: how many mails it is attached inside)."""
    subject = " ".join(str(message.get("Subject", "")).split()) or None
    blocks = [f"# {subject or '(no subject)'}"]
    headers = {h: " ".join(str(message[h]).split()) for h in _HEADERS if message.get(h)}
    if headers:
        blocks.append("  \n".join(f"{h}: {v}" for h, v in headers.items()))
    blocks.append(_body(message, uri, label))
    names = []
    for n, part in enumerate(message.iter_attachments(), start=1):
        name = part.get_filename() or f"attachment-{n}"
        if name in names:
            name = f"{n}-{name}"  # two attachments of one name: each a uri of its own
        names.append(name)
        _attachment(part, name, uri, label, parts, depth)
    if names:
        blocks.append("Attachments: " + ", ".join(names))
    metadata: dict[str, Any] = {h.lower(): v for h, v in headers.items()}
    if "date" in metadata:
        metadata["date"] = _iso_date(metadata["date"])
    return subject, "\n\n".join(b for b in blocks if b.strip()), metadata


def _iso_date(value: str) -> str:
    """A Date header as ISO 8601 (so a filter can compare dates as text), or as it was when unreadable."""
    try:
        return parsedate_to_datetime(value).isoformat()
    except (TypeError, ValueError, IndexError):
        return value


def _body(message: EmailMessage, uri: str, label: str) -> str:
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
        return convert_html(html, label=label, uri=uri, fallback_title=None, charset="utf-8").text
    return str(content).strip()


def _attachment(
    part: EmailMessage, name: str, mail_uri: str, mail_label: str, parts: _Parts, depth: int
) -> None:
    """An attachment of a format haiku reads, as a document of its own; others are counted, failures noted."""
    converter = registry.by_suffix(PurePosixPath(name)) or registry.by_media_type(part.get_content_type())
    if converter is None or converter.name in _NOT_INSIDE:
        parts.unread.append(name)
        return
    # A mailbox's message is a fragment of its file's uri already: its attachments go on beneath it.
    joined = "/" if "#" in mail_uri else "#"
    label = f"{mail_label}{joined}attachment/{name}"
    uri = f"{mail_uri}{joined}attachment/{quote(name, safe='')}"
    if converter.name == "eml":
        _attached_mail(part, uri, label, mail_uri, parts, depth + 1)
        return
    data = part.get_payload(decode=True)
    limits = parts.raw.limits
    try:
        if not isinstance(data, bytes) or not data.strip():
            raise ConversionError(f"{label}: empty")
        doc = converter.read(RawDocument(data, label, uri, PurePosixPath(name).stem or name, limits=limits))
        if not doc.text.strip():
            raise ConversionError(f"{label}: no text")
    except ConversionError as exc:
        parts.notes.append(f"{exc}; left out")
        return
    if len(doc.text) > limits.max_text_mb * 2**20:
        parts.notes.append(over_limit(label, len(doc.text), "max_text_mb", limits.max_text_mb, "text of "))
        return
    parts.notes.extend(doc.notes)
    metadata = {**(doc.metadata or {}), "attached_to": mail_uri, PART_OF: parts.raw.uri}
    parts.documents.append(dataclasses.replace(doc, uri=uri, notes=(), metadata=metadata, children=()))


def _attached_mail(
    part: EmailMessage, uri: str, label: str, mail_uri: str, parts: _Parts, depth: int
) -> None:
    """A mail attached to a mail (forwarded as `message/rfc822`, or an `.eml` file): a mail of its own,
    its attachments beneath it; no deeper than `MAX_DEPTH` mails inside one another."""
    if depth > MAX_DEPTH:
        parts.notes.append(
            f"{label}: a mail inside more than {MAX_DEPTH} mails; left out with its attachments"
        )
        return
    try:
        content = part.get_content()
    except (LookupError, ValueError, KeyError, TypeError):  # an unknown charset, a broken encoding
        content = None
    if isinstance(content, bytes | str):  # an `.eml` file attached as bytes
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
        content, unread = _parse(data, depth)
        parts.notes += unread.notes(label)
    if not isinstance(content, EmailMessage) or not any(
        content.get(h) for h in ("From", "To", "Subject", "Date", "Message-ID")
    ):
        parts.notes.append(f"{label}: not an e-mail message; left out")
        return
    at = len(parts.documents)
    subject, text, metadata = _message(content, uri, label, parts, depth)
    title = subject or PurePosixPath(label.rsplit("/", 1)[-1]).stem
    metadata = {**metadata, "attached_to": mail_uri, PART_OF: parts.raw.uri}
    parts.documents.insert(at, ConvertedDocument(uri, title, [Segment(text)], metadata=metadata))


EML = Converter(name="eml", read=read_eml, suffixes=(".eml",), media_types=("message/rfc822",))
MBOX = Converter(name="mbox", read=read_mbox, suffixes=(".mbox",), media_types=("application/mbox",))
