"""Metadata given on the command line (`--meta KEY=VALUE`) into the dict stored with a document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haiku_cli.errors import InputError


def parse_metadata(pairs: Sequence[str]) -> dict[str, Any]:
    """`k=v` pairs from the command line into a metadata dict."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--meta takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out
