"""Telling a text layer a reader could read from the mojibake that fonts without a Unicode map produce."""

from __future__ import annotations

import re
import unicodedata

# Too little text to judge: short pages pass.
_MIN_CHARS = 40
_MIN_LATIN_LETTERS = 100
# Natural languages written in Latin letters keep vowels (with y) at about 30-50% of their letters;
# text whose glyph codes were shifted by a font's private encoding ("7KH TXLFN") is far from that.
_VOWEL_SHARE = (0.22, 0.65)
# Symbols outside words, numbers and ordinary punctuation: a few in tables and formulas, not a third.
_ODD_SHARE = 0.3
_GARBAGE_WORDS = 0.3
_MIN_WORDS = 15
_RUN = re.compile(r"[^\W\d_]{3,}")
_VOWELS = frozenset("aeiouy")
# Also dashes, curly quotes, guillemets and the like, written as escapes.
_PUNCT = frozenset(
    ".,;:!?'\"()[]{}-/\\%&$@#*+=<>|_~^`\u2013\u2014\u2018\u2019\u201c\u201d\u2026\u2022\u00b7\u00ab\u00bb\u00b0\u00a7\u00a9\u00ae\u2122\u20ac\u00a3\u00a5"
)
_EDGES = "".join(_PUNCT)


def unreadable(text: str) -> bool:
    """Whether a page's text is mostly garbage: odd symbols, no vowels, or tokens that are no words."""
    chars = [c for c in text if not c.isspace()]
    if len(chars) < _MIN_CHARS:
        return False
    odd = sum(not (c.isalnum() or c in _PUNCT) for c in chars)
    if odd >= _ODD_SHARE * len(chars):
        return True
    # Letters of words only: codes such as `p3w0` or `XK-2Z7` in tables have no vowels to count.
    letters = [c for run in _RUN.findall(text) for c in run]
    latin = [b for c in letters if (b := _latin_base(c))]
    if len(latin) >= _MIN_LATIN_LETTERS and len(latin) * 2 >= len(letters):
        vowels = sum(b in _VOWELS for b in latin) / len(latin)
        if not _VOWEL_SHARE[0] <= vowels <= _VOWEL_SHARE[1]:
            return True
    judged = [w for t in text.split() if (w := _judge(t)) is not None]
    return len(judged) >= _MIN_WORDS and judged.count(False) >= _GARBAGE_WORDS * len(judged)


def _latin_base(c: str) -> str | None:
    base = unicodedata.normalize("NFKD", c)[0].lower()
    return base if "a" <= base <= "z" else None


# Glyph codes shifted by a private font encoding: "3URFHHGLQJV" for "Proceedings", "7KH" for "The".
_SHIFTED = re.compile(r"\d[A-Z]{2,}")
_PARTS = re.compile(r"[^\W_]+")


def _judge(token: str) -> bool | None:
    """False for a token no language writes (`3URFHHGLQJV`, `TXLFN`), True for a word, None for numbers.

    Identifiers in code (`input_stream.tell()`, `cp1252`, `getElementById`) count as words.
    """
    parts = _PARTS.findall(token)
    if not any(c.isalpha() for p in parts for c in p):
        return None
    for part in parts:
        if _SHIFTED.match(part):
            return False
        latin = [b for c in part if (b := _latin_base(c))]
        if len(latin) >= 5 and not any(b in _VOWELS for b in latin) and part.lower() != "https":
            return False
    return True
