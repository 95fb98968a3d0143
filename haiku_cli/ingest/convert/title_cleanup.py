"""What papers leave around and inside their titles: archive stamps (arXiv, HAL, DOI), footnote marks, a
title broken over lines, and single generic words (`Abstract`, `History`) that are headings, not titles."""

from __future__ import annotations

import re

# arXiv's sidebar stamp: `arXiv:math/9404236v1 [math.HO] 1 Apr 1994`, `arXiv:1706.03762v5 [cs.CL] 6 Dec 2017`.
_ARXIV = re.compile(
    r"arXiv:\s*[\w.\-/]+(?:v\d+)?(?:\s*\[[^\]]*\])?(?:\s+\d{1,2}\s+[A-Z][a-z]{2,8}\.?\s+\d{4})?",
    re.IGNORECASE,
)
# HAL's: `[inria-00555588, v1]`, `hal-01234567, version 2`.
_HAL = re.compile(r"\[?\s*\b[a-z]+-\d{6,}\s*,\s*v(?:ersion)?\s*\d+\s*\]?", re.IGNORECASE)
_DOI = re.compile(r"(?:\bdoi:\s*|https?://(?:dx\.)?doi\.org/)10\.\d{4,}/\S+", re.IGNORECASE)
# Footnote marks set after a word: `Kelips\u2217`, `Commit Protocol \u2217`, `WARN Report*`, `Title†‡`.
_MARKS = re.compile("\\s*[\u2217*†‡§¶⋆✱]+(?=\\s|$|[:;,.])")
# A title line ending in one of these goes on on the next line.
_CONNECTORS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "for",
        "and",
        "or",
        "to",
        "in",
        "on",
        "with",
        "by",
        "from",
        "via",
        "at",
        "as",
        "into",
        "over",
        "under",
        "towards",
        "toward",
        "using",
        "its",
        "their",
        "is",
        "are",
        "vs",
    ]
)
# `Fault-Tolerant`, `Cache-Aware`: a modifier waiting for its noun.
_HYPHEN_MODIFIER = re.compile(
    r"\w+-(?:\w+(?:ant|ent|ive|ed)|based|aware|free|driven|oriented|efficient|preserving|scale|level)$",
    re.IGNORECASE,
)
# A line of authors or affiliations, not the rest of a title: initials, mail, several commas, affiliation
# numbers after a name (`Gupta1,2`).
_AUTHORS = re.compile(r"@|\b[A-Z]\.\s|,.*,|[a-z]\d+(?:,\d+)*(?=[\s,]|$)")
_MAX_CHARS = 200
# Headings a first page holds in large type that name no document.
GENERIC = frozenset(
    [
        "abstract",
        "history",
        "introduction",
        "contents",
        "preface",
        "foreword",
        "summary",
        "overview",
        "background",
        "acknowledgements",
        "acknowledgments",
        "references",
        "bibliography",
        "appendix",
        "index",
        "chapter",
        "section",
        "article",
        "paper",
        "draft",
        "problem",
        "proceedings",
        "editorial",
        "preprint",
    ]
)


def strip_stamps(text: str) -> str:
    """Text without archive stamps and footnote marks, its spaces collapsed."""
    for stamp in (_ARXIV, _HAL, _DOI):
        text = stamp.sub(" ", text)
    return " ".join(_MARKS.sub("", text).split())


def tidy(title: str | None, following: list[str] | None = None) -> str | None:
    """A title without stamps and footnote marks, joined to the lines after it while it is plainly
    unfinished (ends in `:`, a connecting word or a hyphenated modifier); None when nothing is left but
    punctuation or a single generic word."""
    if title is None:
        return None
    title = strip_stamps(title).strip(" ,;")
    rest = [line for line in (strip_stamps(x) for x in following or []) if line]
    for line in rest[:2]:
        # Lower case: the sentence of the title goes on (`... of Events` / `in a Distributed System`).
        if not (_unfinished(title) or line[:1].islower()):
            break
        if len(title) + len(line) + 1 > _MAX_CHARS or _AUTHORS.search(line):
            break
        title = f"{title} {line}".replace(" :", ":")
    title = title.replace(" :", ":").rstrip(" :,;")
    return None if generic(title) else title


def generic(title: str) -> bool:
    """Whether a title is no title: no word at all, or a single generic one (`Abstract`, `History`)."""
    words = re.findall(r"[^\W\d_]+", title)
    return not words or (len(words) == 1 and words[0].lower() in GENERIC)


def _unfinished(title: str) -> bool:
    stripped = title.rstrip()
    if stripped.endswith((":", "-", "\u2013", "\u2014", ",")):
        return True
    last = stripped.rsplit(" ", 1)[-1].lower()
    return last in _CONNECTORS or bool(_HYPHEN_MODIFIER.search(stripped))


def lines_after(title: str, page: str) -> list[str]:
    """The page's lines after the line the title ends on (when the page holds the title's last words)."""
    lines = [" ".join(x.split()) for x in page.splitlines()]
    lines = [x for x in lines if x]
    tail = " ".join(strip_stamps(title).split()[-3:])
    for i, line in enumerate(lines):
        if tail and strip_stamps(line).endswith(tail):
            return lines[i + 1 : i + 3]
    return []
