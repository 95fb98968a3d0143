"""Documents read out of another (a mail's attachments, a mailbox's messages): each names the document it
is part of under the metadata key `part_of`, so deleting that document, or its file leaving a synced
source, takes its parts with it, and a part no longer in a changed file is dropped."""

from __future__ import annotations

import json
from collections.abc import Iterable

from haiku_cli.store.blocking import wait
from haiku_cli.store.filters import sql_string
from haiku_cli.store.handle import Database, parse_json_object
from haiku_cli.store.reads import get_documents, rows_where

PART_OF = "part_of"
"""The metadata key a part stores the uri of the document it was read out of under."""

# Metadata is stored as JSON written with json.dumps' default separators: the key followed by ": ".
_HAS_PART_OF = f"instr(metadata, {sql_string(json.dumps(PART_OF) + ': ')}) > 0"


def stored_parts(db: Database, uris: Iterable[str]) -> dict[str, dict[str, str]]:
    """The stored parts of the documents under these uris: by that uri, each part's uri -> its id.

    One query over the documents (parts are few; a database without any answers from the metadata column).
    """
    wanted = set(uris)
    out: dict[str, dict[str, str]] = {}
    if not wanted:
        return out
    for row in wait(rows_where(db, db.documents, _HAS_PART_OF, ["id", "uri", "metadata"])).to_pylist():
        parent = parse_json_object(row["metadata"]).get(PART_OF)
        if isinstance(parent, str) and parent in wanted:
            out.setdefault(parent, {})[row["uri"] or ""] = row["id"]
    return out


def parts_of(db: Database, document_ids: Iterable[str]) -> dict[str, str]:
    """The stored parts of these documents (none of them among those given): by id, their uris."""
    ids = set(document_ids)
    uris = [d.uri for d in wait(get_documents(db, ids)).values() if d.uri]
    found = stored_parts(db, uris).values()
    return {i: uri for parts in found for uri, i in parts.items() if i not in ids}
