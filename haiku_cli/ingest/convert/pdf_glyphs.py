"""Glyphs a PDF's font gives no Unicode for. PDFium hands back their raw codes: below 32 control
characters that would vanish from the text (`how bad does get?` where the page shows ε), from 32 up
ordinary characters that stand for something else (`!` for → in TeX's symbol font, `P` for ∑ in its
extension font). TeX's math fonts (cmmi, cmsy, cmex, their bold) say by name what every code is: those
are mapped. Any other font's control code is marked with U+FFFD rather than dropped; its codes from 32
up are kept as they are, since a text font without a map nearly always sets letters at their own codes.

Asking PDFium which characters lack a map costs a call per character, so only a page whose text holds a
raw control code set in a TeX math font (TeX sets the Greek letters and most relations below 32) is
asked; every other page is read as fast as before.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any

MARK = "\ufffd"
# Control characters PDFium does not use itself (\x02 marks a soft hyphen; tabs and line ends are text).
UNMAPPED = re.compile(r"[\x00\x01\x03-\x08\x0b\x0c\x0e-\x1f]")
_SUBSET = re.compile(r"^[A-Z]{6}\+")
_M = MARK
# TeX's math italic (OML: cmmi): Greek letters, then old-style digits, italic letters and a few symbols.
_OML = (
    "ΓΔΘΛΞΠΣΥΦΨΩαβγδϵζηθικλμνξπρστυϕχ"
    f"ψωεϑϖϱςφ↼↽⇀⇁{_M}{_M}▷◁0123456789.,</>⋆∂ABCDEFGHIJKLMNOPQRSTUVWXYZ♭♮♯⌣⌢ℓ"  # noqa: RUF001
    "abcdefghijklmnopqrstuvwxyzıȷ℘\u20d7⁀"  # noqa: RUF001
)
# TeX's math symbols (OMS: cmsy); its capitals are calligraphic letters, read as the letters.
_OMS = (
    "−·×∗÷⋄±∓⊕⊖⊗⊘⊙○∘•≍≡⊆⊇≤≥⪯⪰∼≈⊂⊃≪≫≺≻"  # noqa: RUF001
    "←→↑↓↔↗↘≃⇐⇒⇑⇓⇔↖↙∝′∞∈∋△▽\u0338↦∀∃¬∅ℜℑ⊤⊥ℵABCDEFGHIJKLMNOPQRSTUVWXYZ∪∩⊎∧∨"  # noqa: RUF001
    "⊢⊣⌊⌋⌈⌉{}⟨⟩|‖↕⇕\\≀√⨿∇∫⊔⊓⊑⊒§†‡¶♣♢♡♠"
)
# TeX's math extension (OMX: cmex): delimiters in their sizes and pieces, big operators, wide accents.
_OMX = (
    "()[]⌊⌋⌈⌉{}⟨⟩|‖/\\()()[]⌊⌋⌈⌉{}⟨⟩/\\()[]⌊⌋⌈⌉{}⟨⟩/\\/\\"
    f"⎛⎞⎡⎤⎣⎦⎢⎥⎧⎫⎩⎭⎨⎬⎪{_M}⎝⎠⎜⎟⟨⟩⊔⊔∮∮⨀⨀⨁⨁⨂⨂∑∏∫⋃⋂⨄⋀⋁∑∏∫⋃⋂⨄⋀⋁∐∐"  # noqa: RUF001
    "\u0302\u0302\u0302\u0303\u0303\u0303[]⌊⌋⌈⌉{}√√√√√" + _M * 11
)
_FAMILIES = (("CMMI", _OML), ("CMBMI", _OML), ("CMSY", _OMS), ("CMBSY", _OMS), ("CMEX", _OMX))


def glyph_for(font: str, code: int) -> str:
    """The character an unmapped code stands for in `font`: a TeX math font's, else the mark for a
    control code and the code itself from 32 up."""
    table = _tex_table(font)
    if table is not None:
        return table[code] if 0 <= code < len(table) else MARK
    return MARK if code < 32 else chr(code)


def _tex_table(font: str) -> str | None:
    name = _SUBSET.sub("", font).upper()
    return next((table for prefix, table in _FAMILIES if name.startswith(prefix)), None)


def map_unmapped(text: str, textpage: Any) -> str:
    """`text` (the page's text, from `textpage`) with each glyph without a Unicode map mapped or marked."""
    if not UNMAPPED.search(text):
        return text
    if textpage.count_chars() != len(text):
        # Characters outside the BMP shift the text's offsets off the character indexes: mark only.
        return UNMAPPED.sub(MARK, text)
    import pypdfium2.raw as raw

    font = _FontAt(textpage.raw)
    chars = list(text)
    tex = False
    for match in UNMAPPED.finditer(text):
        name = font.at(match.start())
        chars[match.start()] = glyph_for(name, ord(match.group()))
        tex = tex or _tex_table(name) is not None
    if not tex:
        return "".join(chars)
    # A TeX math font's codes from 32 up are asked of every character (there is no asking by font).
    unmapped = raw.FPDFText_HasUnicodeMapError
    for i, char in enumerate(text):
        if " " <= char < "\x80" and unmapped(font.page, i):
            chars[i] = glyph_for(font.at(i), ord(char))
    return "".join(chars)


class _FontAt:
    """The name of the font a character of a text page is set in."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self._buffer = ctypes.create_string_buffer(128)
        self._flags = ctypes.c_int()

    def at(self, index: int) -> str:
        import pypdfium2.raw as raw

        buffer = self._buffer
        size = raw.FPDFText_GetFontInfo(self.page, index, buffer, len(buffer), ctypes.byref(self._flags))
        return buffer.value.decode("utf-8", "replace") if 0 < size <= len(buffer) else ""
