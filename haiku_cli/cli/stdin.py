"""Reading text a user hands a command: a file, or standard input when the name is '-'."""

from __future__ import annotations

import sys
from pathlib import Path

from haiku_cli.errors import InputError


def read_text(source: str, *, what: str) -> str:
    """The UTF-8 text of `source` ('-' reads standard input); unreadable or undecodable input is bad input."""
    where = "standard input" if source == "-" else source
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).expanduser().read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} from {where}: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where} is not UTF-8 text (byte {exc.start}); convert it first, e.g. with iconv"
        ) from exc
