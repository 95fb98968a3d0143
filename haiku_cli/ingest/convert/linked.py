"""The images a Markdown or HTML document links to: `data:` URIs, files beside it, and those of a page
fetched over http(s) (downloaded under the page's own limits); each stored one becomes a marker."""

from __future__ import annotations

import base64
import binascii
import re
import stat
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from haiku_cli.config.settings import IngestSettings
from haiku_cli.ingest.convert.download import download
from haiku_cli.ingest.convert.images import PictureCollector
from haiku_cli.ingest.convert.limits import over_limit
from haiku_cli.ingest.document import ConversionError, ConvertedDocument
from haiku_cli.store.markers import marker

# ![alt](target "title"), the target optionally in <...>; the title (if any) is a caption too.
_IMAGE = re.compile(r"""!\[([^\]\n]*)\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+["']([^"'\n]*)["'])?\s*\)""")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_DOWNLOAD_SECONDS = 30


def with_linked_pictures(doc: ConvertedDocument, label: str, limits: IngestSettings) -> ConvertedDocument:
    """`doc` with the images its text links to stored as its pictures (see `link_pictures`)."""
    collector = PictureCollector(label, limits)
    segments = [
        replace(s, text=link_pictures(s.text, uri=doc.uri, collector=collector)) for s in doc.segments
    ]
    pictures, notes = collector.finish()
    return replace(doc, segments=segments, pictures=pictures, notes=doc.notes + notes)


def link_pictures(text: str, *, uri: str, collector: PictureCollector) -> str:
    """`text` with each image it links to that could be stored replaced by the picture's marker.

    A `data:` image that cannot be stored becomes its alt text (its bytes are no text to index); other
    links that cannot be followed stay as they are. Fenced code is left alone.
    """
    parts = _FENCE.split(text)
    # split() with one group alternates: text, fence, text inside, fence, ... Only even-indexed runs
    # outside fences are read; a fence's body is the run after an odd count of fences.
    out: list[str] = []
    inside = False
    for i, part in enumerate(parts):
        if i % 2 == 1:  # a fence marker toggles code on or off
            inside = not inside
            out.append(part)
        elif inside:
            out.append(part)
        else:
            out.append(_IMAGE.sub(lambda m: _replace(m, uri, collector), part))
    return "".join(out)


def _replace(match: re.Match[str], uri: str, collector: PictureCollector) -> str:
    alt, target, title = match.group(1), match.group(2).strip("<>"), match.group(3) or ""
    if target.startswith("picture:"):
        return match.group(0)
    caption = alt.strip() or title.strip()
    is_data = target.lower().startswith("data:")
    source = target if not is_data else "data: URI"
    reference = collector.next_reference()
    try:
        data = _read(target, uri, collector)
    except ConversionError as exc:
        collector.skip(reference, str(exc))
        data = None
    if data is not None and collector.add_encoded(data, reference, caption=caption, source=source[:500]):
        return marker(reference, caption)
    return caption if is_data else match.group(0)


def _read(target: str, uri: str, collector: PictureCollector) -> bytes | None:
    """The bytes a link names, or None when it is not one haiku follows from this document."""
    limit = int(collector.limits.max_file_mb * 2**20)
    if target.lower().startswith("data:"):
        return _data_uri(target, limit)
    scheme = urlsplit(target).scheme.lower()
    page = urlsplit(uri).scheme.lower()
    if page in ("http", "https") and scheme in ("", "http", "https"):
        accept = "image/png, image/jpeg, image/*;q=0.8"
        # Read as the page's redirects are: a public page's picture never from a local or private address.
        limits = collector.limits
        data, _, _ = download(
            urljoin(uri, target), timeout=_DOWNLOAD_SECONDS, limits=limits, accept=accept, linked_from=uri
        )
        return data
    if page == "file" and scheme == "":
        return _local(linked_file(Path(unquote(urlsplit(uri).path)), target), limit)
    return None  # a remote image of a local document is not fetched: adding a file stays offline


def linked_file(document: Path, target: str) -> Path:
    """The file a local document's image link (`target`, as written; a stored picture's `source`) names."""
    return document.parent / unquote(urlsplit(target).path)


def _data_uri(target: str, limit: int) -> bytes:
    head, _, payload = target.partition(",")
    if len(payload) * 3 // 4 > limit:
        raise ConversionError(over_limit("data: URI", len(payload) * 3 // 4, "max_file_mb", limit / 2**20))
    try:
        if head.lower().endswith(";base64"):
            return base64.b64decode(payload, validate=False)
        return unquote(payload).encode("latin-1")
    except (binascii.Error, ValueError, UnicodeEncodeError) as exc:
        raise ConversionError("its data: URI is damaged") from exc


def _local(path: Path, limit: int) -> bytes:
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConversionError(f"{path} is not a file")
        if info.st_size > limit:
            raise ConversionError(over_limit(str(path), info.st_size, "max_file_mb", limit / 2**20))
        with path.open("rb") as f:
            return f.read(limit + 1)[:limit]
    except FileNotFoundError:
        raise ConversionError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConversionError(f"{path}: cannot read ({exc.strerror or exc})") from exc
