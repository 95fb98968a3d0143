"""Markdown: kept as is (the chunker reads its structure) minus YAML front matter; titled by its H1."""

from __future__ import annotations

import re

from haiku_cli.ingest.document import ConvertedDocument, Segment

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FM_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Remove a leading YAML front matter block; return (its title if any, the rest of the text)."""
    m = _FRONT_MATTER.match(text)
    # Only key: value looking blocks count, so a document that merely starts with a rule survives.
    if not m or not re.match(r"[\w-]+:", m.group(1)):
        return None, text
    t = _FM_TITLE.search(m.group(1))
    title = t.group(1).strip("\"'").strip() if t else None
    return title or None, text[m.end() :]


def first_heading(text: str, level: int = 1) -> str | None:
    """The text of the first ATX or setext heading of `level` outside code fences, if any."""
    fence: str | None = None
    prev = ""
    for line in text.splitlines():
        f = _FENCE.match(line)
        if fence:
            if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence):
                fence = None
            continue
        if f:
            fence = f.group(1)
            continue
        m = _ATX.match(line)
        if m and len(m.group(1)) == level and m.group(2).strip():
            return m.group(2).strip()
        underline = "=" if level == 1 else "-"
        if level <= 2 and prev.strip() and re.fullmatch(rf" {{0,3}}{underline}{{3,}}[ \t]*", line):
            return prev.strip()
        prev = line
    return None


def convert_markdown(text: str, *, uri: str, fallback_title: str | None) -> ConvertedDocument:
    """Turn markdown source into a one-segment document titled by front matter, first H1 or fallback."""
    fm_title, body = split_front_matter(text)
    title = fm_title or first_heading(body) or fallback_title
    return ConvertedDocument(uri=uri, title=title, segments=[Segment(body.strip("\n"))])
