"""Glyphs a PDF's font gives no Unicode for. PDFium hands back their raw codes, which below 32 are control
characters that would vanish from the text (`how bad does get?` where the page shows ε). TeX's math
fonts say by name what those codes are; any other such glyph is marked with U+FFFD rather than dropped.

Codes from 32 up read as ordinary characters and cannot be told from real ones without asking the font
of every character, which would slow every page down; they are left as PDFium gives them.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any

MARK = "\ufffd"
# Control characters PDFium does not use itself (\x02 marks a soft hyphen; tabs and line ends are text).
UNMAPPED = re.compile(r"[\x00\x01\x03-\x08\x0b\x0c\x0e-\x1f]")
_SUBSET = re.compile(r"^[A-Z]{6}\+")
# TeX's math italic (OML: cmmi, the Greek letters) and math symbols (OMS: cmsy), codes 0-31.
_OML = "ΓΔΘΛΞΠΣΥΦΨΩαβγδϵζηθικλμνξπρστυϕχ"
_OMS = "−·×∗÷⋄±∓⊕⊖⊗⊘⊙○∘•≍≡⊆⊇≤≥⪯⪰∼≈⊂⊃≪≫≺≻"  # noqa: RUF001
_FAMILIES = (("CMMI", _OML), ("CMBMI", _OML), ("CMSY", _OMS), ("CMBSY", _OMS))


def glyph_for(font: str, code: int) -> str:
    """The character a code below 32 stands for in `font` (a TeX math font), else the mark."""
    name = _SUBSET.sub("", font).upper()
    for prefix, table in _FAMILIES:
        if name.startswith(prefix) and 0 <= code < len(table):
            return table[code]
    return MARK


def map_unmapped(text: str, textpage: Any) -> str:
    """`text` (the page's text, from `textpage`) with each raw control code mapped or marked."""
    if not UNMAPPED.search(text):
        return text
    if textpage.count_chars() != len(text):
        # Characters outside the BMP shift the text's offsets off the character indexes: mark only.
        return UNMAPPED.sub(MARK, text)
    import pypdfium2.raw as raw

    buffer = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    chars = list(text)
    for match in UNMAPPED.finditer(text):
        i = match.start()
        size = raw.FPDFText_GetFontInfo(textpage.raw, i, buffer, len(buffer), ctypes.byref(flags))
        font = buffer.value.decode("utf-8", "replace") if 0 < size <= len(buffer) else ""
        chars[i] = glyph_for(font, ord(text[i]))
    return "".join(chars)
