"""Saved conversations: the messages, the capabilities' whole state and the scope, one JSON file each.

A session is written whole to a temporary file that is then renamed over the old one, so a reader (or a
crash) sees either the previous session or the new one, never a mix.

The scope a session covers (its databases and filter) is sealed with an HMAC under a key of this user's
kept beside the sessions (`.scope-key`, readable by the user alone): a file whose scope was edited by hand
no longer matches its seal, and resuming it is refused unless the user asks to rescope it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import shlex
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.state import Source
from haiku_cli.config.paths import sessions_dir
from haiku_cli.errors import InputError, exception_reason

FORMAT = 1
KEY_FILE = ".scope-key"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_name(name: str) -> str:
    """A session name safe to use as a file name, or an `InputError` saying what is allowed."""
    if not _NAME.match(name):
        raise InputError(
            f"invalid session name {name!r}: use up to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def new_name(now: datetime | None = None) -> str:
    """A name for a session the user did not name: `chat-YYYYMMDD-HHMMSS` (UTC)."""
    return (now or datetime.now(UTC)).strftime("chat-%Y%m%d-%H%M%S")


class Seal(StrEnum):
    """What a session file's seal says of the scope it records."""

    INTACT = "intact"  # the databases and filter haiku saved it with
    EDITED = "edited"  # changed since haiku saved it
    UNSEALED = "unsealed"  # no seal: written by an older haiku, or the seal removed
    NO_KEY = "no_key"  # the key that sealed it is gone, so it cannot be checked


class Turn(BaseModel):
    """One answered question as the user saw it: the answer and its numbered citations."""

    question: str
    answer: str
    grounded: bool
    citations: list[Citation] = Field(default_factory=list)
    asked_at: datetime


class Session(BaseModel):
    """A conversation: its scope (sources and filter), answered turns, messages and capability state."""

    format: int = FORMAT
    name: str
    created_at: datetime
    updated_at: datetime
    revision: int = 0  # bumped by every save; a save on top of another process's save is refused
    sources: list[Source]
    document_filter: str | None = None
    turns: list[Turn] = Field(default_factory=list)
    messages: list[Any] = Field(default_factory=list)  # pydantic-ai's message JSON
    state: dict[str, Any] = Field(default_factory=dict)  # HaikuDeps.dump(): every capability's state
    scope_seal: str | None = None  # HMAC of sources and filter; see `SessionStore.scope_intact`

    @classmethod
    def start(cls, name: str, sources: Sequence[Source], document_filter: str | None = None) -> Session:
        """An empty session over the given scope."""
        now = datetime.now(UTC)
        return cls(
            name=check_name(name),
            created_at=now,
            updated_at=now,
            sources=list(sources),
            document_filter=document_filter,
        )

    def history(self) -> list[ModelMessage]:
        """The saved messages as pydantic-ai messages, ready for `message_history`."""
        return ModelMessagesTypeAdapter.validate_python(self.messages)

    def answered(self, turn: Turn, messages: Sequence[ModelMessage], state: dict[str, Any]) -> Session:
        """A copy of the session after one more answered question (this session is left untouched)."""
        return self.model_copy(
            update={
                "updated_at": turn.asked_at,
                "turns": [*self.turns, turn],
                "messages": ModelMessagesTypeAdapter.dump_python(list(messages), mode="json"),
                "state": state,
            }
        )

    def rescoped(self, sources: Sequence[Source], document_filter: str | None) -> Session:
        """A copy of the session scoped to other databases (or another filter) from now on."""
        return self.model_copy(update={"sources": list(sources), "document_filter": document_filter})

    def resume_command(self) -> str:
        """The command that continues this session (databases given by path must be given again)."""
        paths = "".join(f" --db {shlex.quote(s.path)}" for s in self.sources if s.path is not None)
        return f"haiku chat --session {self.name}{paths}"

    def same_scope(self, sources: Sequence[Source], document_filter: str | None) -> bool:
        """Whether the given sources and filter are the ones this session was started with."""
        return _scope_key(self.sources) == _scope_key(sources) and self.document_filter == document_filter


def _scope_key(sources: Sequence[Source]) -> list[tuple[str, str | None]]:
    return sorted((s.name, s.path) for s in sources)


def _seal(key: bytes, session: Session) -> str:
    """The HMAC of what a session covers: its databases, in their order, and its filter."""
    scope = {
        "sources": [[s.name, s.path] for s in session.sources],
        "document_filter": session.document_filter,
    }
    return hmac.new(key, json.dumps(scope, sort_keys=True).encode(), hashlib.sha256).hexdigest()


class SessionSummary(BaseModel):
    """What `haiku chat list` shows of a session."""

    name: str
    created_at: datetime
    updated_at: datetime
    questions: int
    databases: list[str]
    document_filter: str | None = None


class SessionList(BaseModel):
    """Every readable saved session, most recently used first (`haiku chat list --json`)."""

    sessions: list[SessionSummary] = Field(default_factory=list)


class SessionStore:
    """Sessions as `NAME.json` files in one directory."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else sessions_dir()

    def path(self, name: str) -> Path:
        """The file holding session `name`."""
        return self.root / f"{check_name(name)}.json"

    def exists(self, name: str) -> bool:
        """Whether a session of that name is saved."""
        return self.path(name).is_file()

    def load(self, name: str) -> Session:
        """The saved session `name`; a missing or unreadable one is an `InputError` naming the file."""
        path = self.path(name)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise InputError(f"no session named '{name}'; see haiku chat list") from None
        except OSError as exc:
            raise InputError(f"cannot read session '{name}' ({path}): {exc.strerror or exc}") from None
        try:
            session = Session.model_validate_json(raw)
            session.history()  # the messages must be readable too, or the next question would fail
        except (ValidationError, ValueError) as exc:
            first = exception_reason(exc, upto="line")
            raise InputError(
                f"session '{name}' ({path}) is unreadable ({first}); delete it with haiku chat delete {name}"
            ) from None
        if session.format > FORMAT:
            raise InputError(f"session '{name}' was written by a newer haiku; upgrade haiku to resume it")
        return session

    def scope_intact(self, session: Session) -> bool:
        """Whether the session's databases and filter are the ones haiku last saved it with."""
        return self.seal_check(session) is Seal.INTACT

    def seal_check(self, session: Session) -> Seal:
        """How the session's scope compares with its seal (see `Seal`)."""
        key = self._read_key()
        if key is None:
            return Seal.NO_KEY
        if session.scope_seal is None:
            return Seal.UNSEALED
        return Seal.INTACT if hmac.compare_digest(session.scope_seal, _seal(key, session)) else Seal.EDITED

    def save(self, session: Session) -> Session:
        """Write the session atomically and return it at its new revision.

        Refused (nothing written) when the file was saved by someone else since `session` was loaded,
        so two chats on one session never silently drop each other's questions.
        """
        path = self.path(session.name)
        # A data dir naming a file would otherwise read as "unreadable", i.e. changed by another process.
        blocker = next((p for p in (self.root, *self.root.parents) if p.is_file()), None)
        if blocker is not None:
            raise InputError(f"cannot save session '{session.name}': {blocker} is a file, not a folder")
        on_disk = self._revision(path)
        if on_disk != session.revision:
            raise InputError(
                f"session '{session.name}' was changed by another haiku process; "
                f"resume it again with --session {session.name}"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        key = self._key()
        saved = session.model_copy(update={"revision": session.revision + 1})
        saved.scope_seal = _seal(key, saved)
        data = saved.model_dump_json(indent=1).encode()
        fd, tmp = tempfile.mkstemp(prefix=f".{session.name}.", suffix=".tmp", dir=self.root)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return saved

    def delete(self, name: str) -> None:
        """Remove session `name`; a missing one is an `InputError`."""
        try:
            self.path(name).unlink()
        except FileNotFoundError:
            raise InputError(f"no session named '{name}'; see haiku chat list") from None

    def discard_unanswered(self, name: str) -> bool:
        """Remove session `name` only if its saved file holds no answered question; True if removed.

        What is on disk decides, not a copy in memory: a session answered elsewhere since is kept.
        """
        try:
            saved = Session.model_validate_json(self.path(name).read_bytes())
        except (OSError, ValidationError, ValueError):
            return False  # missing, or unreadable: never delete what cannot be checked
        if saved.turns:
            return False
        self.path(name).unlink(missing_ok=True)
        return True

    def summaries(self) -> SessionList:
        """Every readable saved session, most recently used first (unreadable files are skipped)."""
        found: list[SessionSummary] = []
        if not self.root.is_dir():
            return SessionList()
        for path in self.root.glob("*.json"):
            if not _NAME.match(path.stem):
                continue
            try:
                s = Session.model_validate_json(path.read_bytes())
            except (OSError, ValidationError, ValueError):
                continue
            found.append(
                SessionSummary(
                    name=s.name,
                    created_at=s.created_at,
                    updated_at=s.updated_at,
                    questions=len(s.turns),
                    databases=[src.name for src in s.sources],
                    document_filter=s.document_filter,
                )
            )
        return SessionList(sessions=sorted(found, key=lambda s: s.updated_at, reverse=True))

    @property
    def key_path(self) -> Path:
        """The file holding this user's key that seals what each session covers."""
        return self.root / KEY_FILE

    def _read_key(self) -> bytes | None:
        try:
            return self.key_path.read_bytes()
        except FileNotFoundError:
            return None

    def _key(self) -> bytes:
        """This user's sealing key, made (readable by the user alone) on the first save."""
        path = self.key_path
        if (key := self._read_key()) is not None:
            return key
        fd, tmp = tempfile.mkstemp(prefix=".key.", suffix=".tmp", dir=self.root)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_hex(32).encode())
                f.flush()
                os.fsync(f.fileno())
            with contextlib.suppress(FileExistsError):  # never replace a key made meanwhile
                os.link(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return path.read_bytes()

    def _revision(self, path: Path) -> int:
        try:
            return int(json.loads(path.read_bytes()).get("revision", 0))
        except FileNotFoundError:
            return 0
        except (OSError, ValueError, AttributeError):
            # Unreadable: let the write replace it only if we never read it either (a fresh session).
            return -1
