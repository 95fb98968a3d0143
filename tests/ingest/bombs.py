"""Hostile DOCX packages built on the fly: small on disk, huge once decompressed."""

from __future__ import annotations

import io
import zipfile

from .helpers import make_docx

_PARAGRAPH = b"<w:p><w:r><w:t>aaaa</w:t></w:r></w:p>"


def docx_bomb(xml_mb: int) -> bytes:
    """A valid DOCX whose document.xml decompresses to about `xml_mb` MB of paragraphs."""
    source = zipfile.ZipFile(io.BytesIO(make_docx()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as package:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                body = _PARAGRAPH * (xml_mb * 2**20 // len(_PARAGRAPH))
                data = data.replace(b"<w:body>", b"<w:body>" + body, 1)
            package.writestr(info.filename, data)
    return out.getvalue()
