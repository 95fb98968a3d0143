"""A database's folder as pyarrow sees it: a local directory or an `s3://` prefix, to list and copy files.

Lance writes data, deletion and index files once under names it never reuses, so copying one that is
already there is never needed; a manifest names a version's files, so it is copied after them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from haiku_cli.errors import InputError

if TYPE_CHECKING:
    from pyarrow.fs import FileSystem

    from haiku_cli.store.location import Location

_ENDPOINT_KEYS = ("endpoint", "aws_endpoint", "endpoint_url", "aws_endpoint_url")
_REGION_KEYS = ("region", "aws_region")
_KEY_ID = ("access_key_id", "aws_access_key_id")
_SECRET = ("secret_access_key", "aws_secret_access_key")
_TOKEN = ("session_token", "aws_session_token")


@dataclass(frozen=True)
class Folder:
    """A folder of files in a file system (the root of a database)."""

    fs: FileSystem
    root: str
    local: bool

    def path(self, relative: str) -> str:
        """The full path of a file under this folder."""
        return f"{self.root}/{relative}"

    def listing(self, relative: str) -> dict[str, int]:
        """The files under `relative` (recursively), relative to it, with their sizes; empty when it is
        not there."""
        from pyarrow.fs import FileSelector, FileType

        base = self.path(relative)
        found = self.fs.get_file_info(FileSelector(base, recursive=True, allow_not_found=True))
        return {f.path[len(base) + 1 :]: int(f.size or 0) for f in found if f.type == FileType.File}

    def size(self, relative: str) -> int:
        """One file's size in bytes."""
        return int(self.fs.get_file_info(self.path(relative)).size or 0)

    def copy_in(self, source: Folder, relative: str) -> int:
        """Copy one file from `source` to the same place here, whole or not at all; its size in bytes."""
        from pyarrow.fs import copy_files

        target = self.path(relative)
        # A local copy cut off by a kill must not leave a part of a file under the final name, where the
        # next publish would take it for whole; an object store's put is whole or absent by itself.
        landing = f"{target}.part" if self.local else target
        if self.local:
            self.fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        size = source.size(relative)
        copy_files(
            source.path(relative), landing, source_filesystem=source.fs, destination_filesystem=self.fs
        )
        if self.local:
            self.fs.move(landing, target)
        return size


def folder_of(location: Location, *, once_within: float | None = None) -> Folder:
    """The database's folder; object stores other than S3 are refused in one line. `once_within`: each S3
    request is given up after this many seconds and not tried again (the client's defaults otherwise)."""
    from pyarrow.fs import LocalFileSystem, S3FileSystem

    path = location.local_path
    if path is not None:
        return Folder(LocalFileSystem(), str(path.expanduser().absolute()), local=True)
    parts = urlsplit(location.uri)
    if parts.scheme != "s3":
        raise InputError(
            f"{location.uri}: haiku publishes to a local folder or an s3:// bucket, not {parts.scheme}://"
        )
    opts = location.storage_options

    def option(keys: tuple[str, ...]) -> str | None:
        return next((opts[k] for k in keys if k in opts), None)

    endpoint = option(_ENDPOINT_KEYS)
    allow_http = opts.get("allow_http", "").lower() == "true"
    scheme = urlsplit(endpoint).scheme if endpoint and "://" in endpoint else None
    # Credentials not in the options come from the environment (AWS_ACCESS_KEY_ID, ...), as LanceDB's.
    fs = S3FileSystem(
        access_key=option(_KEY_ID),
        secret_key=option(_SECRET),
        session_token=option(_TOKEN),
        region=option(_REGION_KEYS),
        endpoint_override=endpoint.split("://", 1)[-1] if endpoint else None,
        scheme=scheme or ("http" if allow_http else "https"),
        # A file smaller than a multipart upload's part is then put in one request, not three.
        allow_delayed_open=True,
        **_bounded(once_within),
    )
    return Folder(fs, f"{parts.netloc}{parts.path}".rstrip("/"), local=False)


def _bounded(seconds: float | None) -> dict[str, Any]:
    from pyarrow.fs import AwsStandardS3RetryStrategy

    if seconds is None:
        return {}
    retry = AwsStandardS3RetryStrategy(max_attempts=1)
    return {"connect_timeout": seconds, "request_timeout": seconds, "retry_strategy": retry}
