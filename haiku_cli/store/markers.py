"""Where a picture sits in its document's text: a marker, `![caption](picture:REFERENCE)`.

The chunk holding a marker covers that picture (a rebuild re-chunks the stored text, so it keeps that),
and the caption is searched like any other text.
"""

from __future__ import annotations

import re

MARKER = re.compile(r"!\[([^\]\n]*)\]\(picture:([\w.-]+)\)")
CAPTION_CHARS = 300  # a caption is a label, not a page of text


def marker(reference: str, caption: str) -> str:
    """The text standing for a picture where it sits in its document."""
    return f"![{clean_caption(caption)}](picture:{reference})"


def clean_caption(caption: str) -> str:
    """A caption on one line, without brackets that would end its marker, at most CAPTION_CHARS long."""
    text = " ".join(caption.replace("[", "(").replace("]", ")").split())
    return text if len(text) <= CAPTION_CHARS else text[: CAPTION_CHARS - 1].rstrip() + "…"


def picture_refs(text: str) -> list[str]:
    """The references of the pictures whose markers `text` holds, in order, each once."""
    return list(dict.fromkeys(m.group(2) for m in MARKER.finditer(text)))


def picture_marks(text: str) -> list[tuple[str, str]]:
    """(reference, caption) of each picture whose marker `text` holds, in order, each once."""
    return list({m.group(2): (m.group(2), m.group(1)) for m in MARKER.finditer(text)}.values())
