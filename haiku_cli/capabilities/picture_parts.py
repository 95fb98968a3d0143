"""Pictures on the wire: each one sent to a model as a labelled image part, and recognised again.

A picture goes to the model as two content items: a label (its caption, document and database in words,
then a machine tag naming database, document and reference) and, directly after it, the image. Only that
pair is ours: the tag alone (a text-only model gets the label without bytes) or our wording above a
user's own image is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import BinaryContent

from haiku_cli.databases.pictures import PictureKey
from haiku_cli.store.markers import picture_refs
from haiku_cli.store.records import PictureInfo, PictureRecord

# Pictures sent with one search's results (or beside one capsule): enough for the figures of the best
# hits, few enough that a request stays a reasonable size.
MAX_PICTURES = 4
_TAG = re.compile(r'<haiku-picture database="([^"]*)" document="([^"]*)" reference="([^"]*)"/>')
_MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg"}


def tag(key: PictureKey) -> str:
    """The machine tag that names a picture in its label."""
    database, document_id, reference = (_attr(v) for v in key)
    return f'<haiku-picture database="{database}" document="{document_id}" reference="{reference}"/>'


def _attr(value: str) -> str:
    return value.replace('"', "'").replace("\n", " ")


def label(key: PictureKey, info: PictureInfo, title: str | None) -> str:
    """A picture's label: what it shows and where it is from, then its machine tag."""
    where = f"p. {info.page}, " if info.page else ""
    caption = f": {info.caption}" if info.caption else ""
    return (
        f"Picture {key.reference} of {title or 'untitled'!r} ({where}database {key.database})"
        f"{caption} {tag(key)}"
    )


def image_part(key: PictureKey, record: PictureRecord) -> BinaryContent:
    """The image itself, named by its key."""
    identifier = f"{key.database}/{key.document_id}/{key.reference}"
    return BinaryContent(
        record.data, media_type=_MEDIA_TYPES.get(record.format, "image/png"), identifier=identifier
    )


def picture_items(
    found: Sequence[tuple[PictureKey, PictureRecord, str | None]], *, images: bool
) -> list[str | BinaryContent]:
    """Each picture as its label and, when the model reads images, the image directly after it."""
    items: list[str | BinaryContent] = []
    for key, record, title in found:
        items.append(label(key, record, title))
        if images:
            items.append(image_part(key, record))
    return items


def reads_images(ctx: RunContext[Any]) -> bool:
    """Whether the run's model takes images (pydantic-ai's profile; a text-only model gets labels only)."""
    from pydantic_ai.models import Model

    model = ctx.model  # typed as the abstract model, which has no profile: a model that is not a Model
    return not isinstance(model, Model) or bool(model.profile.get("supports_image_input", True))


def keys_in(items: Iterable[tuple[str, str, str]]) -> list[PictureKey]:
    """The pictures whose markers the texts hold, from (database, document id, text), each once, in order."""
    keys: list[PictureKey] = []
    for database, document_id, text in items:
        keys.extend(PictureKey(database, document_id, ref) for ref in picture_refs(text))
    return list(dict.fromkeys(keys))


def owned(items: Sequence[Any]) -> list[tuple[int, PictureKey]]:
    """Where our pictures sit in a content list: a label holding our tag with an image directly after it."""
    found = []
    for i, item in enumerate(items[:-1]):
        if not isinstance(item, str):
            continue
        match = _TAG.search(item)
        after = items[i + 1]
        if match and isinstance(after, BinaryContent) and after.is_image:
            found.append((i, PictureKey(*match.groups())))
    return found


def without_owned(items: Sequence[Any]) -> list[Any]:
    """The content list without our pictures (label and image); everything else is kept as it is."""
    drop = {j for i, _ in owned(items) for j in (i, i + 1)}
    return [item for j, item in enumerate(items) if j not in drop]
