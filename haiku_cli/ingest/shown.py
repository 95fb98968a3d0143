"""Image files of a folder that its Markdown and HTML documents show: stored as their pictures, so an add
does not report them as unsupported files left out."""

from __future__ import annotations

import os
from pathlib import Path

from haiku_cli.ingest.convert.dispatch import suffix_kind
from haiku_cli.ingest.convert.linked import linked_file
from haiku_cli.ingest.reports import IngestReport
from haiku_cli.store.blocking import wait
from haiku_cli.store.database import Database
from haiku_cli.store.picture_table import pictures_of

# Only these converters read images beside the document (a .docx's pictures come from inside it).
_LINKING_KINDS = ("markdown", "html")


def drop_shown_pictures(db: Database, report: IngestReport) -> None:
    """Remove from `report.left_out` the unsupported files a document of this add stores as its picture."""
    unsupported = {_real(o.source) for o in report.left_out if o.why == "unsupported"}
    if not unsupported:
        return
    documents = {
        o.document_id: Path(o.source)
        for o in report.outcomes
        if o.document_id and o.status in ("added", "updated", "unchanged")
        if suffix_kind(o.source) in _LINKING_KINDS
    }
    if not documents:
        return
    shown = {
        _real(str(linked_file(documents[document_id], picture.source)))
        for document_id, pictures in wait(pictures_of(db, documents)).items()
        for picture in pictures
        if picture.source
    }
    report.left_out = [o for o in report.left_out if o.why != "unsupported" or _real(o.source) not in shown]


def _real(path: str) -> str:
    # A folder given as `docs/` or through a symlink names the file another way than the link resolves to.
    return os.path.realpath(path)
