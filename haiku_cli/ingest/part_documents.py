"""Documents read out of another (a mail's attachments, a mailbox's messages) as an add names them, and
which stored ones the documents they came from no longer hold."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import unquote

from haiku_cli.store.document_parts import stored_parts

if TYPE_CHECKING:
    from haiku_cli.store.database import Database


def part_label(source: str, parent_uri: str, part_uri: str) -> str:
    """How the report names a document read out of a source's: the source's name and what follows the
    parent's uri in the part's ("notes/mail.eml#attachment/report.pdf")."""
    rest = part_uri[len(parent_uri) :] if part_uri.startswith(parent_uri) else part_uri
    return source + unquote(rest)


def gone_parts(
    db: Database, families: Mapping[str, tuple[set[str], str]], moved_from: Iterable[str]
) -> dict[str, str]:
    """The stored parts no longer held, by id, each named for the report.

    `families`: the uri of each document added with its parts -> the uris of those parts and its source's
    name; `moved_from`: the uris documents had before a sync found them moved (all their parts are gone).
    """
    wanted = dict(families)
    wanted.update((uri, (set(), unquote(uri))) for uri in moved_from if uri not in wanted)
    gone: dict[str, str] = {}
    for parent, parts in stored_parts(db, wanted).items():
        held, source = wanted[parent]
        gone.update((i, part_label(source, parent, uri)) for uri, i in parts.items() if uri not in held)
    return gone
