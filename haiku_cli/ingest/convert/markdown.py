"""Markdown: kept as is (the chunker reads its structure) minus YAML front matter; titled by its H1."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from haiku_cli.ingest.convert.linked import with_linked_pictures
from haiku_cli.ingest.convert.registry import Converter, RawDocument
from haiku_cli.ingest.convert.text import decode_text, first_line
from haiku_cli.ingest.document import ConvertedDocument, Segment

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FM_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A Pandoc/MkDocs attribute list ending a heading: `{ #handling-errors }`, `{.unnumbered}`, `{: #id }`.
_ATTRIBUTES = re.compile(r"[ \t]*\{:?[ \t]*(?:[#.][\w:-]|[\w-]+=)[^{}\n]*\}[ \t]*$")
# A link of a symbol or two to an anchor (of the page, made absolute or not), ending a heading from HTML.
_PERMALINK = re.compile(r"[ \t]*\[[^\w\s\[\]]{0,2}\]\([^()\s#]*#[^()\s]*(?:[ \t]+\"[^\"]*\")?\)[ \t]*$")
# Build-time includes (mdBook's `{{#include a.rs}}`, `{{#rustdoc_include ...}}`; FastAPI's `{* a.py *}`;
# MkDocs snippets' `--8<-- "a.md"`; reStructuredText's `.. literalinclude:: a.py` with its options):
# the tool pastes a file there, the source holds only the directive.
_INCLUDE = re.compile(
    r"\{\{#[a-z_]+[ \t][^{}\n]*\}\}"
    r"|^[ \t]*\{\*[^\n]*\*\}[ \t]*$"
    r"|^[ \t]*-{1,2}8<-{1,2}[ \t]+[^\n]*$"
    r"|^\.\. (?:literalinclude|include)::[^\n]*(?:\n[ \t]+:[\w-]+:[^\n]*)*",
    re.MULTILINE,
)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# Lines that only open or close a block of an extension (pymdownx blocks `/// note | Title`, `////`;
# admonitions `!!! note "Title"`, `???+ tip`; fenced divs `::: warning`): markup, not content. A title
# they carry is kept on their line, so the text's lines stay the file's lines.
_BLOCK_MARKER = re.compile(
    r"^[ \t]*(?:"
    r"/{3,}[ \t]*(?:[\w-]+[ \t]*(?:\|[ \t]*(?P<bar>.*?))?)?"
    r"|(?:!!!|\?\?\?\+?)[ \t]*[\w-]+(?:[ \t]+[\w-]+)*(?:[ \t]+\"(?P<quoted>[^\"]*)\")?"
    r"|:{3,}[ \t]*(?:\{[^}\n]*\}|[\w-]+)?(?:[ \t]+(?P<div>[^:\n]*?))?[ \t]*:*"
    r")[ \t]*$",
    re.MULTILINE,
)
_MARKER_OPENERS = ("///", "!!!", "???", ":::")
# reStructuredText underlines (and overlines) a title with a run of one punctuation character.
_UNDERLINE = re.compile(r"^([=\-~^\"'#*+:.`_])\1{2,}[ \t]*$")


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Remove a leading YAML front matter block; return (its title if any, the rest of the text)."""
    m = _FRONT_MATTER.match(text)
    # Only key: value looking blocks count, so a document that merely starts with a rule survives.
    if not m or not re.match(r"[\w-]+:", m.group(1)):
        return None, text
    t = _FM_TITLE.search(m.group(1))
    title = t.group(1).strip("\"'").strip() if t else None
    return title or None, text[m.end() :]


def _outside_fences(text: str) -> Iterator[str]:
    """The lines of `text` outside code fences, fence lines themselves left out."""
    fence: str | None = None
    for line in text.splitlines():
        f = _FENCE.match(line)
        if fence:
            if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence):
                fence = None
            continue
        if f:
            fence = f.group(1)
            continue
        yield line


def first_heading(text: str, level: int = 1) -> str | None:
    """The text of the first ATX or setext heading of `level` outside code fences, if any."""
    prev = ""
    for line in _outside_fences(text):
        m = _ATX.match(line)
        if m and len(m.group(1)) == level and heading_text(m.group(2)):
            return heading_text(m.group(2))
        underline = "=" if level == 1 else "-"
        if level <= 2 and prev.strip() and re.fullmatch(rf" {{0,3}}{underline}{{3,}}[ \t]*", line):
            return heading_text(prev)
        prev = line
    return None


def first_any_heading(text: str) -> str | None:
    """The text of the first heading of any level outside code fences: ATX, setext or a reStructuredText
    title (underlined, or over- and underlined, by a run of punctuation at least as long as it)."""
    prev = ""
    for line in _outside_fences(text):
        m = _ATX.match(line)
        if m and heading_text(m.group(2)):
            return heading_text(m.group(2))
        u = _UNDERLINE.match(line)
        title = heading_text(prev)
        long_enough = u is not None and (u.group(1) in "=-" or len(line.strip()) >= len(prev.strip()))
        if long_enough and title and not _UNDERLINE.match(prev):
            return title
        prev = line
    return None


def heading_text(text: str) -> str:
    """A heading as a reader sees it: one line of text, without an attribute list (`{ #anchor }`) or a
    permalink to itself (`[¶](#anchor)`)."""
    return " ".join(_PERMALINK.sub("", _ATTRIBUTES.sub("", text)).split())


def without_markup(text: str) -> str:
    """The text without HTML comments outside code and without include directives anywhere."""
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in _INCLUDE.sub("", text).split("\n"):
        f = _FENCE.match(line)
        if fence is None:
            if not f:
                prose.append(line)
                continue
            fence = f.group(1)
            if prose:
                out.append(_without_comments("\n".join(prose)))
                prose = []
        elif (
            f
            and f.group(1)[0] == fence[0]
            and len(f.group(1)) >= len(fence)
            and not line.strip(fence[0] + " \t")
        ):
            fence = None
        out.append(line)
    if prose:
        out.append(_without_comments("\n".join(prose)))
    return "\n".join(out)


def _without_comments(text: str) -> str:
    # A comment leaves its line breaks behind, so the text's lines stay the file's lines.
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    if not any(opener in text for opener in _MARKER_OPENERS):
        return text  # the usual case, found without running the pattern over every line
    return _BLOCK_MARKER.sub(_marker_title, text)


def _marker_title(match: re.Match[str]) -> str:
    return (match.group("bar") or match.group("quoted") or match.group("div") or "").strip()


def convert_markdown(text: str, *, uri: str, fallback_title: str | None) -> ConvertedDocument:
    """Turn markdown source into a one-segment document titled by front matter, its first H1, else its
    first heading of any level, else the fallback.

    HTML comments, include directives and extension block markers are not content and are left out.
    """
    fm_title, body = split_front_matter(text)
    skipped = text[: len(text) - len(body)].count("\n")  # the front matter's lines
    body = without_markup(body)
    title = fm_title or first_heading(body) or first_any_heading(body) or fallback_title
    segment = Segment(body.strip("\n"), line=skipped + first_line(body))
    return ConvertedDocument(uri=uri, title=title, segments=[segment])


def read_markdown(raw: RawDocument) -> ConvertedDocument:
    """A Markdown (or reStructuredText) file, its linked images stored as its pictures."""
    notes: list[str] = []
    text = decode_text(raw.data, raw.label, raw.charset, notes)
    doc = replace(convert_markdown(text, uri=raw.uri, fallback_title=raw.fallback_title), notes=tuple(notes))
    return with_linked_pictures(doc, raw.label, raw.limits)


CONVERTER = Converter(
    name="markdown",
    read=read_markdown,
    # reStructuredText titles read like setext headings; nothing else is rewritten
    suffixes=(".md", ".markdown", ".rst"),
    media_types=("text/markdown", "text/x-markdown"),
    text=True,
)
