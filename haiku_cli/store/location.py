"""Where a database lives: a local directory or an object-store URI, and what it is called."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

Kind = Literal["local", "object store", "remote", "memory"]

_OBJECT_STORES = ("s3://", "s3+ddb://", "gs://", "az://", "abfs://")
_ENDPOINT_KEYS = ("endpoint", "aws_endpoint", "endpoint_url", "aws_endpoint_url")


@dataclass(frozen=True)
class Location:
    """A database's name (its identity everywhere) and how to reach it."""

    name: str
    uri: str
    storage_options: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    read_only: bool = False
    # The option that picks this database (`--database notes`), for hints that show a command to run.
    chosen_by: str = field(default="", compare=False)
    # Set by a caller that has just seen a local database's meta table in its folder (a search's
    # `searchable`), so opening it does not look at the folder a second time.
    seen_written: bool = field(default=False, compare=False, repr=False)
    # The `[storage] timeout_seconds` its requests were given (`with_timeout`), for messages that name it.
    timeout_seconds: float | None = field(default=None, compare=False, repr=False)

    @property
    def kind(self) -> Kind:
        """Local directory, object store, LanceDB remote or in-memory."""
        if self.uri.startswith(_OBJECT_STORES):
            return "object store"
        if self.uri.startswith("db://"):
            return "remote"
        if self.uri.startswith("memory://"):
            return "memory"
        return "local"

    @cached_property  # asked by every search (a path made anew cost more than the rest of its checks)
    def local_path(self) -> Path | None:
        """The directory for a local database, else None."""
        if self.kind != "local":
            return None
        uri = self.uri.removeprefix("file://")
        return Path(uri).expanduser()

    @property
    def connect_uri(self) -> str:
        """The URI handed to LanceDB."""
        path = self.local_path
        return str(path) if path is not None else self.uri

    @property
    def can_stall(self) -> bool:
        """Whether reaching the database goes over a network that may stop answering."""
        return self.kind in ("object store", "remote")

    def with_timeout(self, seconds: float) -> Location:
        """This location with object-store request timeouts and a bounded retry budget.

        Options the user set in `storage_options` win; local databases are unchanged.
        """
        if self.kind != "object store":
            return self
        defaults = {
            "timeout": f"{seconds:g}s",
            "connect_timeout": f"{min(seconds, 10.0):g}s",
            "client_max_retries": "2",
            "client_retry_timeout": f"{max(1, round(seconds))}",
            # Lance asks again for a read whose answer broke off (3 times by default): against a store
            # that stalled, each ask waits out the whole timeout, so one is enough.
            "download_retry_count": "1",
        }
        return replace(self, storage_options={**defaults, **self.storage_options}, timeout_seconds=seconds)

    def endpoint_refuses(self) -> bool:
        """Whether the configured object-store endpoint refuses connections right now (nothing listens).

        Told apart from a store that stopped answering, for a message that says which it is; one quick
        connection attempt, made only once a request has already failed.
        """
        endpoint = next((self.storage_options[k] for k in _ENDPOINT_KEYS if k in self.storage_options), "")
        parts = urlsplit(endpoint)
        if not parts.hostname:
            return False
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            with socket.create_connection((parts.hostname, port), timeout=1.0):
                return False
        except ConnectionRefusedError:
            return True
        except (OSError, ValueError):  # no answer, unknown host, bad port: not a refusal
            return False

    @classmethod
    def from_path(cls, path: Path) -> Location:
        """A database named by path: its name is the file stem."""
        path = path.expanduser()
        return cls(name=path.stem or path.name, uri=str(path.resolve()))
