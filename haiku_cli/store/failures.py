"""Storage failures by kind: classified once, from the exception's type and LanceDB's error text, here alone.

A filter LanceDB refuses is read here too (`classify_filter`): what it found wrong, as a `FilterFault`.

What a failed storage call means for the write under way (did the store answer no, so nothing changed?
did it stop answering, so nothing more should be asked of it?) is decided on the `FailureKind`; the line
a user reads is derived from the kind, so rewording a message never changes what a write does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from http import HTTPStatus

from haiku_cli.errors import DatabaseError, exception_reason
from haiku_cli.store.location import Location


class FailureKind(Enum):
    """What happened to a storage call that failed."""

    MISSING = "missing"  # a data file is gone (removed by hand: a vacuum's removal is read again)
    NO_CREDENTIALS = "no credentials"  # looked up before any request was sent
    READ_ONLY = "read-only"  # a read-only file system
    FULL = "full"  # no space left on the device, or a quota reached
    DENIED = "denied"  # permission denied, access denied, forbidden
    REFUSED = "refused"  # nothing listens at the endpoint
    ERROR_STATUS = "error status"  # the store answered, with an error status (a 500, a 503)
    DROPPED = "dropped connection"  # the connection was cut before the answer came
    STALLED = "stalled"  # a request waited out its limit: the store stopped answering
    UNSENT = "not sent"  # the request got no answer and did not wait: no connection was made
    SETTINGS_UNREAD = "settings unread"  # a full-text index's settings were not read (the cause unsaid)
    ERROR = "error"  # anything else: LanceDB's own words

    @property
    def is_refusal(self) -> bool:
        """The store's definite no: an answer, so the call changed nothing (unlike one never answered,
        or an error status or a dropped connection, after which the call may have landed)."""
        return self in _REFUSALS


_REFUSALS = frozenset(
    {FailureKind.NO_CREDENTIALS, FailureKind.READ_ONLY, FailureKind.FULL, FailureKind.DENIED}
)


@dataclass(frozen=True)
class Failure:
    """A classified storage failure: its kind, and what its line needs beyond the kind."""

    kind: FailureKind
    detail: str = ""  # ERROR: LanceDB's first line; ERROR_STATUS: the status (`500 Internal Server Error`)

    def reason(self, location: Location | None = None) -> str:
        """The failure in a few plain words; a stall names the location's limit and how to raise it."""
        if self.kind is FailureKind.STALLED:
            return stalled_reason(location)
        if self.kind is FailureKind.ERROR_STATUS:
            return f"the storage answered with an error (HTTP {self.detail}); check the store, then try again"
        if self.kind is FailureKind.ERROR:
            return self.detail
        return _REASONS[self.kind]


# How to raise the storage timeout, for every message about a store that stopped answering.
STORAGE_TIMEOUT_HINT = "check the store, or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)"
_REASONS = {
    # A read retries once after a concurrent vacuum, so a file still missing was removed by hand.
    FailureKind.MISSING: "some of its data files are missing (was the database folder changed by hand?)",
    FailureKind.NO_CREDENTIALS: (
        "no AWS credentials were found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
    ),
    FailureKind.READ_ONLY: "the file system is read-only",
    FailureKind.FULL: "the disk is full; free some space on it, then run the command again",
    FailureKind.DENIED: "permission denied",
    FailureKind.REFUSED: "the connection was refused; check the endpoint",
    FailureKind.DROPPED: (
        "the connection to the storage was dropped before it answered; check the network and the store, "
        "then try again"
    ),
    FailureKind.UNSENT: "cannot connect",
    FailureKind.SETTINGS_UNREAD: "the settings of its full-text index could not be read; check the store",
}

# What storage failures look like deep in LanceDB's (Rust) messages, in the order they are looked for.
_NEEDLES: tuple[tuple[tuple[str, ...], FailureKind], ...] = (
    # Looked up before any request: its failure says "Forbidden" (a metadata service refusing), not a denial.
    (("failed to get aws credentials",), FailureKind.NO_CREDENTIALS),
    (("read-only file system", "os error 30"), FailureKind.READ_ONLY),
    (("no space left", "os error 28", "disk quota"), FailureKind.FULL),
    (("permission denied", "os error 13", "access denied", "accessdenied", "forbidden"), FailureKind.DENIED),
    # Before the timeouts: a refused connection's retry report also names its `retry_timeout`.
    (("connection refused", "connectionrefused"), FailureKind.REFUSED),
)
# Also before the timeouts, for the same reason: the store answered, or the line was cut.
_DROPPED = ("connection reset", "connectionreset", "os error 104", "incompletemessage", "broken pipe")
_TIMED_OUT = ("timed out", "timeout", "deadline")
_NOT_SENT = ("connect error", "error sending request", "dispatch failure")
# An error status as the store client reports it: `Status { status: 500, ...` (after its retries) or
# `Server returned non-2xx status code: 503 Service Unavailable: ...`.
_STATUS = re.compile(r"status(?: code)?: (\d{3})\b")
# What LanceDB (0.40) raises when the analyzer cannot read its full-text index's settings from the store:
# it logs the store's error (a request that timed out, a refused connection) and raises this without it.
_SETTINGS_UNREAD = "does not include tokenizer details"


def classify(exc: BaseException, location: Location | None = None, *, ran: float = 0.0) -> Failure:
    """What happened to a storage call that raised `exc`. `location`: where it went (a request without an
    answer is told apart by asking its endpoint); `ran`: how long the call took, for a failure whose
    message does not say."""
    if isinstance(exc, StorageError):
        return exc.failure
    if is_missing_file(exc):
        return Failure(FailureKind.MISSING)
    if isinstance(exc, TimeoutError):  # a deadline of ours, or the OS giving up on a connection
        return Failure(FailureKind.STALLED)
    lowered = str(exc).strip().lower()
    if location is not None and location.can_stall and _SETTINGS_UNREAD in lowered:
        return _settings_unread(location, ran)
    for needles, kind in _NEEDLES:
        if any(n in lowered for n in needles):
            return Failure(kind)
    status = _STATUS.search(str(exc))
    if status is not None and status.group(1)[0] in "45":
        code = int(status.group(1))
        if code in (401, 403):
            return Failure(FailureKind.DENIED)
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = ""
        return Failure(FailureKind.ERROR_STATUS, f"{code} {phrase}".strip())
    if any(n in lowered for n in _DROPPED):
        return Failure(FailureKind.DROPPED)
    if any(n in lowered for n in _TIMED_OUT):
        return Failure(_unanswered(lowered, location, timed_out=True))
    if any(n in lowered for n in _NOT_SENT):
        return Failure(_unanswered(lowered, location, timed_out=False))
    return Failure(FailureKind.ERROR, plain_first_line(exc))


def _unanswered(lowered: str, location: Location | None, *, timed_out: bool) -> FailureKind:
    """A request that got no answer: refused (nothing listens now), waited out (the store stalled), or
    not sent (no connection). The client's words do not tell: its retry report names its timeout even
    when every try was refused, and a request it gave up on is only `error sending request`."""
    if location is None:
        return FailureKind.STALLED if timed_out else FailureKind.UNSENT
    if timed_out:
        return unanswered_kind(location)
    if location.can_stall and location.endpoint_refuses():
        return FailureKind.REFUSED
    # The store client reports how long the failed request ran (`GET ... in 2.001358017s - HTTP error`):
    # one that ran for its whole timeout was accepted and never answered.
    ran = max((_duration(m.group(1), m.group(2)) for m in _RAN_FOR.finditer(lowered)), default=0.0)
    limit = request_timeout(location)
    if limit is not None and ran >= 0.9 * limit:
        return FailureKind.STALLED
    return FailureKind.UNSENT


def _settings_unread(location: Location, ran: float) -> Failure:
    """The store failed LanceDB's read of a full-text index's settings, whose cause LanceDB only logs:
    refused when nothing listens at the endpoint, a stall when the call ran a whole request limit."""
    if location.endpoint_refuses():
        return Failure(FailureKind.REFUSED)
    limit = request_timeout(location)
    # A request that waited out its limit took at least that long; any other failure comes sooner.
    if limit is not None and ran >= limit:
        return Failure(FailureKind.STALLED)
    return Failure(FailureKind.SETTINGS_UNREAD)


def unanswered_kind(location: Location) -> FailureKind:
    """A request that went unanswered: refused when nothing listens at the endpoint now, else a stall."""
    return FailureKind.REFUSED if location.can_stall and location.endpoint_refuses() else FailureKind.STALLED


class StorageError(DatabaseError):
    """A storage call that failed (exit 3), with what happened to it: decisions read `failure.kind`."""

    def __init__(self, message: str, failure: Failure, **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.failure = failure


def kind_of(exc: BaseException | None) -> FailureKind | None:
    """The kind of a failure already classified (a `StorageError`), or None for any other exception."""
    return exc.failure.kind if isinstance(exc, StorageError) else None


def storage_failure(
    where: Location | str, what: str, exc: BaseException, *, ran: float = 0.0
) -> StorageError:
    """One line for a storage call that failed: `database 'x' cannot be written: the disk is full; ...`.

    `where` is the database's location (its name alone for a local lock file, which cannot stall).
    """
    location = None if isinstance(where, str) else where
    failure = classify(exc, location, ran=ran)
    name = where if isinstance(where, str) else where.name
    return StorageError(f"database '{name}' {what}: {failure.reason(location)}", failure)


def unanswered_failure(location: Location, what: str) -> StorageError:
    """A call given up on by a deadline of ours: refused if nothing listens at the endpoint, else a stall."""
    failure = Failure(unanswered_kind(location))
    return StorageError(f"database '{location.name}' {what}: {failure.reason(location)}", failure)


def failure_reason(exc: BaseException, location: Location | None = None, *, ran: float = 0.0) -> str:
    """A storage failure in a few plain words (LanceDB's Rust messages mean little to a user)."""
    return classify(exc, location, ran=ran).reason(location)


def is_stall(exc: BaseException, location: Location) -> bool:
    """Whether a storage call failed on a request that waited out its limit (a store that stopped
    answering; `TimeoutError`: a deadline of ours)."""
    if isinstance(exc, TimeoutError):
        return True
    return location.can_stall and classify(exc, location).kind is FailureKind.STALLED


def is_refusal(exc: BaseException | None) -> bool:
    """Whether a storage call failed on the store's definite no (access denied, a read-only or full
    disk, no credentials): an answer, so the call changed nothing, unlike one whose answer never came."""
    return exc is not None and classify(exc).kind.is_refusal


# A Rust Duration as the store client prints it: `2.001358017s`, `850.2ms`, `12µs`.
_RAN_FOR = re.compile(r"(?:\bin |elapsed: )(\d+(?:\.\d+)?)(ns|µs|us|ms|s)\b")
_UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def _duration(number: str, unit: str) -> float:
    return float(number) * _UNITS[unit]


def request_timeout(location: Location) -> float | None:
    """The per-request limit of the location's store client in seconds (its `timeout` option, set from
    `[storage] timeout_seconds` unless the database's own `storage_options` name one); None if unknown."""
    own = location.storage_options.get("timeout", "")
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ns|µs|us|ms|s|min|m|h)?\s*", own)
    return _duration(found.group(1), found.group(2) or "s") if found else location.timeout_seconds


def stalled_reason(location: Location | None) -> str:
    """A store that stopped answering: the request timeout in force and the setting that changes it."""
    seconds = location.timeout_seconds if location is not None else None
    if location is None or seconds is None:
        return f"the storage did not answer in time; {STORAGE_TIMEOUT_HINT}"
    own = location.storage_options.get("timeout", f"{seconds:g}s")
    if own != f"{seconds:g}s":  # the database's own storage_options won over the setting
        return (
            f"the storage did not answer within its storage_options timeout ({own}); "
            "check the store, or raise it"
        )
    return f"the storage did not answer within {seconds:g} s; {STORAGE_TIMEOUT_HINT}"


def plain_first_line(exc: BaseException) -> str:
    """The first line of LanceDB's message without the Rust source locations it adds (`scanner.rs:834:33`)."""
    return re.sub(r",?\s*[\w/.-]+\.rs:\d+:\d+", "", exception_reason(exc, upto="line"))[:300]


def is_missing_file(exc: BaseException | None) -> bool:
    """Whether a read failed because a data file is gone: a `vacuum` removed the version it was reading."""
    if isinstance(exc, StorageError):
        return exc.failure.kind is FailureKind.MISSING
    text = str(exc)
    return isinstance(exc, FileNotFoundError) or ("Not found" in text and ".lance" in text)


def is_read_failure(exc: BaseException) -> bool:
    """Whether LanceDB's exception is the store failing a read (I/O, a file gone), not bad input."""
    return isinstance(exc, OSError) or "LanceError(IO)" in str(exc) or is_missing_file(exc)


def is_table_not_found(exc: BaseException) -> bool:
    """Whether LanceDB's exception says a listed table has no committed version to open."""
    return "was not found" in str(exc)


class FilterFault(Enum):
    """What LanceDB (its DataFusion SQL parser and planner) found wrong in a filter."""

    UNKNOWN_FIELD = "unknown field"  # a name no column has; `subject`: the name
    NOT_A_MAP = "not a map"  # `metadata['a']`: a text column indexed as if it were a map
    NOT_A_TIME = "not a time"  # a value compared with a time; `subject`: the value
    NOT_TEXT = "not text"  # a value of another type (an unquoted word) compared with text; `subject`: it
    PARSE = "parse"  # the SQL parser's words; `subject`: them, reworded for a user
    OTHER = "other"  # anything else; `subject`: LanceDB's first line without its wrappers


@dataclass(frozen=True)
class FilterProblem:
    """A filter LanceDB refused: what was wrong with it, and the words of the filter that were."""

    fault: FilterFault
    subject: str


_UNKNOWN_FIELD = re.compile(r"No field named ([^.\s]+)")
_NOT_A_MAP = "Cannot access field"
_MISTYPED = re.compile(r"Received literal \w+\((.*?)\) and could not convert to literal of type '(\w+)")
# The parser's message ends "(sql parser error: ...)": up to its last ')', as what was found may be a ')'.
_PARSER = re.compile(r"sql parser error: (.*?)(?: at Line: \d+, Column: \d+)?\)$")
# LanceDB's wrappers around what it found wrong, which say nothing to a user.
_WRAPPERS = re.compile(r"^(?:Invalid input, |lance error: |Query Execution error: |Execution error: )+")


def classify_filter(exc: BaseException) -> FilterProblem:
    """What LanceDB found wrong in a filter that, run alone, raised `exc`."""
    text = str(exc)
    unknown = _UNKNOWN_FIELD.search(text)
    if unknown:
        return FilterProblem(FilterFault.UNKNOWN_FIELD, unknown.group(1))
    if _NOT_A_MAP in text:
        return FilterProblem(FilterFault.NOT_A_MAP, "")
    mistyped = _MISTYPED.search(text)
    if mistyped:
        given, wanted = mistyped.groups()
        fault = FilterFault.NOT_A_TIME if wanted == "Timestamp" else FilterFault.NOT_TEXT
        return FilterProblem(fault, given)
    parsed = _parser_words(exc)
    if parsed is None:
        return FilterProblem(FilterFault.OTHER, _WRAPPERS.sub("", plain_first_line(exc)))
    reworded = (
        parsed.replace("Expected: ", "expected ")
        .replace("found: EOF", "found: the end of the filter")
        .replace("found: ", "found ")
    )
    return FilterProblem(FilterFault.PARSE, reworded)


def unclosed_before(exc: BaseException) -> str | None:
    """What the SQL parser found where it expected a filter's closing ')': the text after a condition
    that is whole alone but not inside parentheses of its own (None for any other failure)."""
    found = re.fullmatch(r"Expected: \), found: (.+)", _parser_words(exc) or "")
    return found.group(1) if found else None


def _parser_words(exc: BaseException) -> str | None:
    """LanceDB's SQL parser's own words, without the `SELECT 1 FROM t WHERE` it wrapped the filter in."""
    text = str(exc)
    parsed = _PARSER.search(text.splitlines()[0] if text else "")
    return parsed.group(1) if parsed else None
