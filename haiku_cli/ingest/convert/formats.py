"""Every format haiku reads, registered once: a new format is its module plus one line here.

The order is the order bytes of unknown type are sniffed in; plain text, which sniffs nothing, is the
last resort of the dispatcher, not of this list.
"""

from __future__ import annotations

from haiku_cli.ingest.convert import (
    code,
    docx,
    epub,
    html,
    image_file,
    mail,
    markdown,
    pdf,
    pptx,
    sheets,
    text,
)
from haiku_cli.ingest.convert.registry import register

register(pdf.CONVERTER)
register(docx.CONVERTER)
register(pptx.CONVERTER)
register(sheets.XLSX)
register(epub.CONVERTER)
register(html.CONVERTER)
register(markdown.CONVERTER)
register(sheets.DELIMITED)
register(mail.EML)
register(mail.MBOX)
register(image_file.CONVERTER)
register(code.CONVERTER)
register(code.TYPESCRIPT)
register(text.CONVERTER)
