"""Sources on object storage (`s3://bucket/prefix/` or one object): listing them and reading one.

The client is pyarrow's S3 file system (already a dependency). A listing gives each object's size and
Last-Modified; an object whose pair is the one stored when it was last read is not read again, and the
ETag its read returned is kept beside them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from haiku_cli.config.settings import IngestSettings
from haiku_cli.errors import exception_reason
from haiku_cli.ingest.convert.dispatch import byte_limit, convert_kind, suffix_kind
from haiku_cli.ingest.convert.limits import over_limit
from haiku_cli.ingest.document import ConversionError, ConvertedDocument, SourceMissing
from haiku_cli.ingest.reports import LeftOut
from haiku_cli.ingest.source_walk import FileChoice

if TYPE_CHECKING:
    from haiku_cli.config.settings import Settings
    from haiku_cli.store.source_tables import SourceKind

_SCHEMES = ("s3://",)
# Object keys under these folder names are never sources (as when a local folder is walked).
_SKIP_PARTS = frozenset({"__pycache__", "node_modules", "site-packages"})


def is_object_uri(source: str) -> bool:
    """Whether a source names object storage (`s3://...`) rather than a path or an http(s) URL."""
    return source.lower().startswith(_SCHEMES)


@dataclass(frozen=True)
class ObjectFile:
    """One object of a source, as the listing gave it; `as_text`: `--include` asked for an unknown suffix."""

    uri: str
    size: int
    mtime_ns: int
    as_text: bool = False

    @property
    def name(self) -> str:
        """The object's last key part (its "file name")."""
        return PurePosixPath(urlsplit(self.uri).path).name


@dataclass(frozen=True)
class Listing:
    """What a source on object storage holds: one object (`file`) or the objects under a prefix."""

    kind: SourceKind
    found: list[ObjectFile | LeftOut]


def source_options(settings: Settings, source: str, database_options: Mapping[str, str]) -> dict[str, str]:
    """The storage options a source is read with: the `[sources]` entry whose prefix is longest, else the
    database's own (a database on the same store usually holds the credentials and endpoint)."""
    matches = [prefix for prefix in settings.sources if source.startswith(prefix)]
    if matches:
        return dict(settings.sources[max(matches, key=len)].storage_options)
    return dict(database_options)


class ObjectStore:
    """One bucket's client, made from LanceDB-style storage options (endpoint, region, keys, allow_http)."""

    def __init__(self, options: Mapping[str, str], timeout_seconds: float = 30.0) -> None:
        from pyarrow import fs

        kwargs: dict[str, Any] = {
            "connect_timeout": min(timeout_seconds, 10.0),
            "request_timeout": timeout_seconds,
        }
        # The environment first, as LanceDB reads it for `s3://` databases; given options win over it.
        lowered = _from_environment() | {k.lower(): v for k, v in options.items()}
        endpoint = _first(lowered, "endpoint", "aws_endpoint", "endpoint_url", "aws_endpoint_url")
        if endpoint:
            parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
            kwargs["endpoint_override"] = parts.netloc
            kwargs["scheme"] = parts.scheme or "https"
        region = _first(lowered, "region", "aws_region", "aws_default_region")
        if region:
            kwargs["region"] = region
        key = _first(lowered, "aws_access_key_id", "access_key_id")
        secret = _first(lowered, "aws_secret_access_key", "secret_access_key")
        if key and secret:
            kwargs["access_key"], kwargs["secret_key"] = key, secret
            token = _first(lowered, "aws_session_token", "session_token", "token")
            if token:
                kwargs["session_token"] = token
        if _first(lowered, "virtual_hosted_style_request", "aws_virtual_hosted_style_request") == "true":
            kwargs["force_virtual_addressing"] = True
        self._fs = fs.S3FileSystem(**kwargs)

    def listing(self, uri: str, choice: FileChoice | None = None) -> Listing:
        """The objects a source names, with what `--include`/`--exclude` and the skip rules leave out.

        A key ending in `/`, or one that is not an object, is a prefix; one naming no object at all is
        an error (a bucket that cannot be reached too).
        """
        from pyarrow import fs

        choice = choice or FileChoice()
        bucket_path = _bucket_path(uri)
        try:
            if not uri.endswith("/"):
                info = self._fs.get_file_info(bucket_path)
                if info.type == fs.FileType.File:
                    found = ObjectFile(_uri_of(info.path), info.size or 0, info.mtime_ns or 0)
                    return Listing("file", [_known(found, choice, found.name)])
            selector = fs.FileSelector(bucket_path.rstrip("/"), recursive=True, allow_not_found=True)
            infos = self._fs.get_file_info(selector)
        except OSError as exc:
            # pyarrow's messages carry the AWS error over several lines: folded onto one, and cut short.
            reason = exception_reason(exc, limit=300, cut="…")
            raise ConversionError(f"{uri}: cannot be listed ({reason})") from None
        objects = sorted((i for i in infos if i.type == fs.FileType.File), key=lambda i: i.path)
        if not objects:
            raise SourceMissing(f"{uri}: no such object or prefix")
        top = bucket_path.rstrip("/") + "/"
        out: list[ObjectFile | LeftOut] = []
        for info in objects:
            rel = info.path.removeprefix(top)
            picked = _picked(ObjectFile(_uri_of(info.path), info.size or 0, info.mtime_ns or 0), rel, choice)
            if picked is not None:
                out.append(picked)
        return Listing("folder", out)

    def look(self, uri: str) -> ObjectFile | None:
        """An object's size and time as the store says now (one HEAD), or None when there is none."""
        from pyarrow import fs

        try:
            info = self._fs.get_file_info(_bucket_path(uri))
        except OSError as exc:
            reason = exception_reason(exc, limit=300, cut="…")
            raise ConversionError(f"{uri}: cannot be asked ({reason})") from None
        if info.type != fs.FileType.File:
            return None
        return ObjectFile(_uri_of(info.path), info.size or 0, info.mtime_ns or 0)

    def etag(self, obj: ObjectFile) -> str | None:
        """The object's ETag, asked with one HEAD request (a listing gives none); None when it cannot be
        asked (the object is then read, as any changed one)."""
        try:
            with self._fs.open_input_file(_bucket_path(obj.uri)) as handle:  # a HEAD, no body read
                return _text((handle.metadata() or {}).get("ETag"))
        except OSError:
            return None

    def read(self, obj: ObjectFile, limits: IngestSettings) -> tuple[ConvertedDocument, str | None]:
        """Read and convert one object under the `[ingest]` limits; its document and the ETag read."""
        kind = suffix_kind(obj.name) or ("text" if obj.as_text else None)
        if kind is None:
            raise ConversionError(f"{obj.uri}: unsupported file type {PurePosixPath(obj.name).suffix}")
        key, limit_mb = byte_limit(kind, limits)
        limit = int(limit_mb * 2**20)
        if obj.size > limit:
            raise ConversionError(over_limit(obj.uri, obj.size, key, limit_mb))
        try:
            with self._fs.open_input_stream(_bucket_path(obj.uri)) as stream:
                data = stream.read(limit + 1)  # it may have grown since it was listed
                etag = (stream.metadata() or {}).get("ETag")
        except FileNotFoundError:
            raise ConversionError(f"{obj.uri}: no such object (deleted since it was listed)") from None
        except OSError as exc:
            reason = exception_reason(exc, limit=300, cut="…")
            raise ConversionError(f"{obj.uri}: cannot be read ({reason})") from None
        if len(data) > limit:
            raise ConversionError(over_limit(obj.uri, len(data), key, limit_mb))
        stem = PurePosixPath(obj.name).stem or obj.name
        doc = convert_kind(data, kind, label=obj.uri, uri=obj.uri, fallback_title=stem, limits=limits)
        return doc, _text(etag)


def _picked(obj: ObjectFile, rel: str, choice: FileChoice) -> ObjectFile | LeftOut | None:
    """An object under a prefix as a walk of a folder treats a file: hidden and tool folders are passed
    over silently, excluded and unsupported ones reported as left out."""
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts) or any(
        p in _SKIP_PARTS or p.endswith(".lancedb") for p in parts[:-1]
    ):
        return None
    excluded = choice.excluded_by(rel, is_dir=False) if (choice.include or choice.exclude) else None
    if excluded is not None:
        return LeftOut(source=obj.uri, why="excluded", detail=excluded)
    return _known(obj, choice, rel)


def _known(obj: ObjectFile, choice: FileChoice, rel: str) -> ObjectFile | LeftOut:
    suffix = PurePosixPath(obj.name).suffix
    if suffix_kind(obj.name) is not None:
        return obj
    if suffix and choice.included(rel):
        return ObjectFile(obj.uri, obj.size, obj.mtime_ns, as_text=True)
    return LeftOut(source=obj.uri, why="unsupported", detail=suffix.lower())


def _text(value: str | bytes | None) -> str | None:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _bucket_path(uri: str) -> str:
    return uri.split("://", 1)[1]


def _uri_of(bucket_path: str) -> str:
    return "s3://" + bucket_path


# The variables LanceDB's object store reads for an `s3://` database, by the option each stands for.
_ENVIRONMENT = {
    "aws_endpoint_url": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"),
    "aws_region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "aws_access_key_id": ("AWS_ACCESS_KEY_ID",),
    "aws_secret_access_key": ("AWS_SECRET_ACCESS_KEY",),
    "aws_session_token": ("AWS_SESSION_TOKEN", "AWS_TOKEN"),
    "aws_virtual_hosted_style_request": ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST",),
}


def _from_environment() -> dict[str, str]:
    """Storage options from the AWS_* environment variables a database on `s3://` honours."""
    import os

    found = {}
    for option, names in _ENVIRONMENT.items():
        value = next((os.environ[n] for n in names if os.environ.get(n)), None)
        if value:
            found[option] = value
    return found


def _first(options: Mapping[str, str], *keys: str) -> str | None:
    return next((options[k] for k in keys if options.get(k)), None)


class ObjectStores:
    """The clients an add or a sync reads object-storage sources with, one per set of storage options."""

    def __init__(self, settings: Settings, database_options: Mapping[str, str]) -> None:
        self._settings = settings
        self._database_options = dict(database_options)
        self._made: dict[tuple[tuple[str, str], ...], ObjectStore] = {}

    def __reduce__(self) -> tuple[type[ObjectStores], tuple[Settings, dict[str, str]]]:
        # Sent to a cluster's workers as what makes the clients, never as open clients.
        return (ObjectStores, (self._settings, self._database_options))

    def get(self, uri: str) -> ObjectStore:
        """The client for a source or object uri (its `[sources]` entry, else the database's options)."""
        options = source_options(self._settings, uri, self._database_options)
        key = tuple(sorted(options.items()))
        if key not in self._made:
            self._made[key] = ObjectStore(options, self._settings.storage.timeout_seconds)
        return self._made[key]
