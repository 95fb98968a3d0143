"""Every format haiku reads, registered once: a new format is its module plus one line here.

The order is the order bytes of unknown type are sniffed in; plain text, which sniffs nothing, is the
last resort of the dispatcher, not of this list.
"""

from __future__ import annotations

from haiku_cli.ingest.convert import docx, html, markdown, pdf, text
from haiku_cli.ingest.convert.registry import register

for _module in (pdf, docx, html, markdown, text):
    register(_module.CONVERTER)
