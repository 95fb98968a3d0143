"""How a source over one of the `[ingest]` size limits is refused."""

from __future__ import annotations


def megabytes(size: int) -> str:
    """A byte count as a short figure: KB under a megabyte, MB above."""
    if size < 2**20:
        return f"{size / 2**10:.0f} KB"
    return f"{size / 2**20:.1f} MB" if size < 10 * 2**20 else f"{size / 2**20:.0f} MB"


def over_limit(label: str, size: int, key: str, limit_mb: float, what: str = "") -> str:
    """The one-line reason for skipping a source: its size, the limit and the setting that raises it."""
    return (
        f"{label}: {what}{megabytes(size)}, over the limit of {limit_mb:g} MB; skipped "
        f"(raise [ingest] {key} in the config file to add it)"
    )
