"""Excerpts of hits and citations: cut between words, links whole, code blocks as lines."""

from __future__ import annotations

import re

from haiku_cli.cli import render

_CHUNK = (
    "# Errors\n\nRaise an [HTTPException](https://fastapi.tiangolo.com/reference/exceptions/#fastapi.HTTPException)"
    " to return errors with details to the client.\n\n```python\nfrom fastapi import HTTPException\n\n"
    "def read(item_id):\n    if item_id not in items:\n        raise HTTPException(status_code=404)\n```\n\n"
    "After the code, more prose follows about handling errors in depth."
)
_LINK = re.compile(r"\[[^\]]*\]\([^)]*\)")


def test_code_keeps_its_lines_and_indentation_where_an_excerpt_may_take_several() -> None:
    shown = render.excerpt(_CHUNK, ["errors"], indent="    ")
    assert "\n    ```python\n    from fastapi import HTTPException\n\n    def read(item_id):\n" in shown
    assert "\n            raise HTTPException(status_code=404)\n    ```\n    After the code" in shown
    one_line = render.excerpt(_CHUNK, ["errors"])
    assert "\n" not in one_line and "```python from fastapi import HTTPException def read" in one_line


def test_a_link_is_shown_whole_with_a_long_target_shortened_in_its_middle() -> None:
    shown = render.excerpt(_CHUNK, ["errors"])
    assert "[HTTPException](https://fastapi.tiangolo.co…TTPException)" in shown
    for width in range(30, 120, 7):
        for term in ("raise", "httpexception", "return"):
            cut = render.excerpt(_CHUNK, [term], width=width)
            opened = cut.count("[")
            assert opened == len(_LINK.findall(cut)), (width, term, cut)  # no half link
