"""Sizes in bytes as people read them, the same in every command that shows one (info, doctor)."""

from __future__ import annotations


def human_size(n: int | None) -> str:
    """Bytes as a short human size: `512 B`, `3.6 MB`; `-` when unknown."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
