"""Reading text a user hands a command: a file, or standard input when the name is '-'."""

from __future__ import annotations

import sys
from pathlib import Path

from haiku_cli.errors import InputError


def read_text(source: str, *, what: str, max_text_mb: float | None = None) -> str:
    """The UTF-8 text of `source` ('-' reads standard input); unreadable or undecodable input is bad input.

    With `max_text_mb` (the `[ingest]` limit on a document's text), input that cannot fit under it is
    refused without reading it all; the limit on characters itself is checked where the text is added.
    """
    where = "standard input" if source == "-" else source
    # UTF-8 takes at most 4 bytes a character: more bytes than that cannot be under the limit.
    max_bytes = None if max_text_mb is None else int(max_text_mb * 2**20) * 4
    size = -1 if max_bytes is None else max_bytes + 1
    try:
        if source == "-":
            data = sys.stdin.buffer.read(size)
        else:
            with Path(source).expanduser().open("rb") as f:
                data = f.read(size)
    except OSError as exc:
        raise InputError(f"cannot read {what} from {where}: {exc.strerror or exc}") from exc
    if max_bytes is not None and len(data) > max_bytes:
        raise InputError(
            f"{what} from {where} is over the limit of {max_text_mb:g} MB; "
            "raise [ingest] max_text_mb in the config file to add it"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where} is not UTF-8 text (byte {exc.start}); convert it first, e.g. with iconv"
        ) from exc
