"""Ids as text output shows them: cut short, as git shows commits, yet long enough to tell apart."""

from __future__ import annotations

from collections.abc import Sequence

SHORT_ID = 8  # the shortest id shown


def short_ids(ids: Sequence[str]) -> dict[str, str]:
    """Each id cut to the shortest length (at least SHORT_ID) at which the given ids stay apart."""
    unique = list(dict.fromkeys(ids))
    width = SHORT_ID
    while width < max((len(i) for i in unique), default=0) and len({i[:width] for i in unique}) < len(unique):
        width += 1
    return {i: i[:width] for i in unique}
