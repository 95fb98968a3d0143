"""A mail's MIME structure, read with its bounds applied while reading.

The standard library's parser reads a whole message, every part and every mail attached inside it, before
anything can look at it, and checks each line against the boundary of every enclosing part: a crafted mail
of a few hundred nested parts costs minutes. Here each level is read on its own: its headers, then its
body split at its own boundary (one pass), each part read the same way, no deeper than `MAX_NESTING`
parts inside one another, no more than `MAX_PARTS` parts in all, and an attached mail parsed only when it
lies within the mail depth the caller reads. What was not read is counted for the mail's note.
"""

from __future__ import annotations

import dataclasses
import re
from email import policy
from email.message import EmailMessage
from email.parser import Parser
from typing import Any

MAX_NESTING = 16
"""How many parts deep (a multipart, or an attached mail, inside another) a mail's structure is read;
real mail nests a handful (mixed > related > alternative, a forwarded mail's the same again)."""
MAX_PARTS = 1000
"""How many parts of one message are read; those beyond are left out."""

_PARSER = Parser(policy=policy.default)


@dataclasses.dataclass
class Unread:
    """What reading a message's structure left out, to be said in its note."""

    parts_left: int = MAX_PARTS
    over_parts: int = 0  # parts beyond MAX_PARTS
    too_deep: int = 0  # parts nested deeper than MAX_NESTING
    unsplit: int = 0  # multiparts without a boundary to split them at

    def notes(self, label: str) -> list[str]:
        said = []
        if self.too_deep:
            said.append(
                f"{label}: {self.too_deep} part(s) nested more than {MAX_NESTING} deep; left out unread"
            )
        if self.unsplit:
            said.append(f"{label}: {self.unsplit} multipart part(s) without a boundary; left out unread")
        if self.over_parts:
            said.append(f"{label}: {self.over_parts} part(s) beyond the first {MAX_PARTS}; left out unread")
        return said


def parse_mail(data: bytes, *, mail_depth: int = 0, max_mail_depth: int) -> tuple[EmailMessage, Unread]:
    """A message as the standard parser gives it, read within the bounds, and what was left out.

    `mail_depth`: how many mails this one is attached inside; a mail attached deeper than
    `max_mail_depth` is kept unparsed (its reader leaves it out and says so).
    """
    unread = Unread()
    # As BytesParser reads bytes: undecodable bytes kept as surrogates, decoded by each part's charset.
    message = _headers(data.decode("ascii", "surrogateescape"))
    _read_body(message, unread, nesting=0, mail_depth=mail_depth, max_mail_depth=max_mail_depth)
    return message, unread


def _headers(text: str) -> EmailMessage:
    message = _PARSER.parsestr(text, headersonly=True)
    assert isinstance(message, EmailMessage)  # what policy.default makes
    return message


def _read_body(
    message: EmailMessage, unread: Unread, *, nesting: int, mail_depth: int, max_mail_depth: int
) -> None:
    """Read the parts of a message whose headers are read (its body is still text), within the bounds."""
    # As read, undecodable bytes still surrogates: `get_payload()` would decode them by a charset a
    # multipart or an attached mail does not have, and replace them.
    body = getattr(message, "_payload", None)
    if not isinstance(body, str):
        return
    maintype, subtype = message.get_content_maintype(), message.get_content_subtype()
    if maintype == "message" and subtype != "delivery-status":
        if mail_depth + 1 > max_mail_depth:
            return  # too deep to be read: its reader says so
        inner = _headers(body)
        _read_body(
            inner, unread, nesting=nesting + 1, mail_depth=mail_depth + 1, max_mail_depth=max_mail_depth
        )
        message.set_payload([inner])
        return
    if maintype != "multipart":
        return
    boundary = message.get_boundary()
    if not boundary:
        unread.unsplit += 1
    parts: list[Any] = []  # EmailMessages; typeshed's set_payload wants the base Message's list
    for text in _split(body, boundary) if boundary else ():
        if unread.parts_left <= 0:
            unread.over_parts += 1
            continue
        unread.parts_left -= 1
        part = _headers(text)
        if subtype == "digest" and part.get("Content-Type") is None:
            part.set_default_type("message/rfc822")
        if part.get_content_maintype() in ("multipart", "message") and nesting + 1 >= MAX_NESTING:
            unread.too_deep += 1
            continue
        _read_body(part, unread, nesting=nesting + 1, mail_depth=mail_depth, max_mail_depth=max_mail_depth)
        parts.append(part)
    message.set_payload(parts)


def _split(body: str, boundary: str) -> list[str]:
    """The parts of a multipart body: what lies between its delimiter lines, up to the closing one (the
    line break before a delimiter is the delimiter's); the preamble and epilogue are not parts."""
    delimiter = re.compile(r"^--" + re.escape(boundary) + r"(--)?[ \t]*\r?$", re.MULTILINE)
    parts: list[str] = []
    start: int | None = None
    for found in delimiter.finditer(body):
        if start is not None:
            parts.append(_without_line_break(body[start : found.start()]))
        if found.group(1):
            return parts
        start = found.end() + 1  # past the delimiter line's own line break
    if start is not None and start <= len(body):  # no closing delimiter: the last part runs to the end
        parts.append(body[start:])
    return parts


def _without_line_break(text: str) -> str:
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text
