"""A bound on what a PDF's compressed streams inflate to, checked before PDFium reads a page.

PDFium inflates a page's content stream whole to read its text: a stream of a few hundred kilobytes can
hold gigabytes of zeros. Each Flate stream other than a picture's (pictures have their own bounds) is
inflated here first, a megabyte at a time and thrown away, and the PDF is refused at the first one past
`[ingest] max_pdf_stream_mb`.
"""

from __future__ import annotations

import re
import zlib

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.document import ConversionError

# A stream's data starts after the `stream` keyword and its end of line (`endstream` ends one).
_STREAM_START = re.compile(rb"(?<!end)stream(?:\r\n|\n|\r)")
_DICTIONARY_SPAN = 4096  # a stream's dictionary precedes it, after its `obj`: looked for this far back
_FEED = 1 << 16
_STEP = 1 << 20


def check_pdf_streams(data: bytes, label: str, limits: IngestSettings) -> None:
    """Refuse a PDF one of whose non-picture Flate streams inflates past `max_pdf_stream_mb`."""
    limit = int(limits.max_pdf_stream_mb * 2**20)
    for found in _STREAM_START.finditer(data):
        head = data[max(0, found.start() - _DICTIONARY_SPAN) : found.start()]
        head = head[head.rfind(b"obj") + 1 :]
        if b"/FlateDecode" not in head or re.search(rb"/Subtype\s*/Image", head):
            continue
        if _inflated_size(data, found.end(), limit) > limit:
            # Inflated no further than past the limit: its whole size is not known, only that it is more.
            raise ConversionError(
                f"{label}: a page stream decompresses to more than the limit of {limits.max_pdf_stream_mb:g} "
                "MB; skipped (raise [ingest] max_pdf_stream_mb in the config file to add it)"
            )


def _inflated_size(data: bytes, start: int, limit: int) -> int:
    """How many bytes the zlib stream at `start` inflates to, counted up to just past `limit` (a corrupt
    stream counts what inflated before the fault: PDFium judges the rest)."""
    inflater = zlib.decompressobj()
    total, at = 0, start
    try:
        while not inflater.eof and total <= limit:
            pending = inflater.unconsumed_tail
            if not pending:
                pending, at = data[at : at + _FEED], at + _FEED
                if not pending:
                    break
            total += len(inflater.decompress(pending, _STEP))
    except zlib.error:
        pass
    return total
