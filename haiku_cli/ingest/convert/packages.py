"""Zip packages (Office files, e-books): their declared sizes checked before anything is inflated."""

from __future__ import annotations

import io
import zipfile

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert.limits import over_limit
from haiku_cli.ingest.document import ConversionError


def check_unpacked_size(data: bytes, label: str, limits: IngestSettings, kind: str) -> None:
    """Refuse a package whose members' declared sizes exceed the limits; zipfile never inflates past them.

    `kind` names the format in the refusal of a file that is no zip package ("corrupt DOCX").
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = package.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ConversionError(f"{label}: corrupt {kind}") from exc
    total = sum(m.file_size for m in members)
    markup = (".xml", ".rels", ".xhtml", ".html", ".htm", ".opf", ".ncx")
    xml = sum(m.file_size for m in members if m.filename.lower().endswith(markup))
    if xml > limits.max_docx_xml_mb * 2**20:
        what = "XML that decompresses to "
        raise ConversionError(over_limit(label, xml, "max_docx_xml_mb", limits.max_docx_xml_mb, what))
    if total > limits.max_file_mb * 2**20:
        what = "decompresses to "
        raise ConversionError(over_limit(label, total, "max_file_mb", limits.max_file_mb, what))
