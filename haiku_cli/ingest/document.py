"""The converted form of a source: text segments plus the little metadata chunking and storage need."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from haiku_cli.errors import InputError


class ConversionError(InputError):
    """A source cannot be turned into text; the message names the source and the reason on one line."""


class SourceMissing(ConversionError):
    """A source that is not there (no such object or prefix): `sync` keeps its documents as missing."""


@dataclass(frozen=True)
class Segment:
    """Markdown-ish text of one block or page; `page` is 1-based for PDFs and None otherwise.

    `line`: the source file's line (1-based) the text starts on, for formats read line by line (text,
    Markdown, reST, code) whose text keeps the file's lines; None when lines do not map (PDF, HTML).
    """

    text: str
    page: int | None = None
    line: int | None = None


@dataclass(frozen=True)
class Picture:
    """A figure of a document, encoded for storage; its marker in the text says where it sits.

    `reference` names it within its document and is the same each time the same source is converted;
    `box` is (left, bottom, right, top) in PDF points on `page`, when the format places it.
    """

    reference: str
    data: bytes
    format: str  # "png" or "jpeg"
    width: int
    height: int
    caption: str = ""
    page: int | None = None
    box: tuple[float, float, float, float] | None = None
    source: str = ""  # where it came from: a file name, a URL, "page render"


@dataclass(frozen=True)
class ConvertedDocument:
    """A source converted to text: where it came from, a best-guess title and its segments in order."""

    uri: str
    title: str | None
    segments: list[Segment]
    notes: tuple[str, ...] = ()  # what a user should know about how it was read (e.g. its encoding)
    pictures: tuple[Picture, ...] = ()
    # What the format says of the source (a mail's sender, recipients and date), stored with the document
    # beneath the metadata an add is given (None: it says nothing, as most formats do).
    metadata: dict[str, Any] | None = None
    # Documents read out of this one, each under a uri of its own (a mail's attachments, a mailbox's
    # messages). `owns_children`: the format may hold such parts, so stored documents whose metadata
    # names this uri as `part_of` and are not among `children` are gone from it.
    children: tuple[ConvertedDocument, ...] = ()
    owns_children: bool = False

    @property
    def text(self) -> str:
        """The segments joined with blank lines: the content stored for the document."""
        return "\n\n".join(s.text.strip("\n") for s in self.segments if s.text.strip())
