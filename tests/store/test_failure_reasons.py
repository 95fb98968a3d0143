"""How a request to an object store that got no answer is named: refused, stalled, or not sent."""

from __future__ import annotations

import socket

from haiku_cli.store.failures import (
    Failure,
    FailureKind,
    StorageError,
    classify,
    failure_reason,
    is_refusal,
    kind_of,
)
from haiku_cli.store.location import Location

HINT = "check the store, or raise [storage] timeout_seconds (HAIKU_STORAGE_TIMEOUT)"
# What the store client says, as LanceDB passes it on.
GAVE_UP = "Error performing GET http://127.0.0.1/lab/x in 2.001358017s - HTTP error: error sending request"
AT_ONCE = "Error performing GET http://127.0.0.1/lab/x in 3.2ms - HTTP error: error sending request"
RETRIED = "RetryError { retries: 2, max_retries: 2, elapsed: 2.1s, retry_timeout: 2s, inner: Http(..) }"


def _store(port: int) -> Location:
    return Location("remote", "s3://lab/x.lancedb", {"endpoint": f"http://127.0.0.1:{port}"}).with_timeout(2)


def test_a_request_without_an_answer_is_named_by_what_the_endpoint_does() -> None:
    # A server that accepts connections (the kernel completes them) and never answers: a stalled store.
    with socket.create_server(("127.0.0.1", 0)) as listening:
        stalled = _store(listening.getsockname()[1])
        # The client gave up after its whole 2 s: it was "cannot connect" before.
        assert (
            failure_reason(RuntimeError(GAVE_UP), stalled) == f"the storage did not answer within 2 s; {HINT}"
        )
        assert (
            failure_reason(RuntimeError(RETRIED), stalled) == f"the storage did not answer within 2 s; {HINT}"
        )
        # Failed at once, without waiting: no connection was made.
        assert failure_reason(RuntimeError(AT_ONCE), stalled) == "cannot connect"
    # Nothing listens at the endpoint now (a server stopped mid-write): refused, whatever the report says
    # about its timeout (a retry report names it even when every try was refused).
    refusing = _store(9)
    refused = "the connection was refused; check the endpoint"
    for said in (GAVE_UP, RETRIED, AT_ONCE):
        assert failure_reason(RuntimeError(said), refusing) == refused


# LanceDB's whole message when its analyzer could not read the full-text index's settings from the store.
SETTINGS_UNREAD = (
    "Invalid input, Full text search index 'text_idx' for index name 'text_idx' does not include tokenizer "
    "details"
)


def test_an_index_whose_settings_the_store_did_not_give_is_named_by_how_long_the_read_ran() -> None:
    unread = ValueError(SETTINGS_UNREAD)
    with socket.create_server(("127.0.0.1", 0)) as listening:
        store = _store(listening.getsockname()[1])
        # LanceDB's message names no cause: a read that took the whole 2 s limit waited it out.
        assert failure_reason(unread, store, ran=2.0) == f"the storage did not answer within 2 s; {HINT}"
        assert failure_reason(unread, store, ran=0.1) == (
            "the settings of its full-text index could not be read; check the store"
        )
    assert failure_reason(unread, _store(9), ran=0.1) == "the connection was refused; check the endpoint"
    # A local database cannot stall: LanceDB's words, as for any other failure it names.
    local = Location("notes", "/tmp/notes.lancedb")
    assert failure_reason(unread, local, ran=60.0) == SETTINGS_UNREAD


# What the store client says, as LanceDB passes it on, when the store answered with an error status, or
# the connection was cut: its retry report names its `retry_timeout` either way, which is not a stall.
STATUS_READ = (
    'Invalid input, Failed to connect to namespace: IO { source: Generic { store: "S3", source: ListRequest '
    "{ source: RetryError(RetryErrorImpl { method: GET, uri: Some(http://127.0.0.1:45433/lab?list-type=2), "
    "retries: 3, max_retries: 3, elapsed: 329.464152ms, retry_timeout: 180s, inner: Status { status: 500, "
    'body: Some("<Error><Code>InternalError</Code></Error>") } }) } }'
)
STATUS_WRITE = (
    "lance error: LanceError(IO): single PUT of x.lancedb/t.lance/data/1.lance failed after 2.4s: Generic S3 "
    "error: Error performing PUT http://127.0.0.1:45433/lab/x in 391.144229ms, after 3 retries, max_retries: "
    "3, retry_timeout: 180s  - Server returned non-2xx status code: 503 Service Unavailable: <Error><Code>"
    "SlowDown</Code></Error>, /root/.cargo/lance-io-13.0.0/src/object_writer.rs:627:9"
)
RESET = (
    'Invalid input, Failed to connect to namespace: IO { source: Generic { store: "S3", source: RetryError('
    "RetryErrorImpl { retries: 3, max_retries: 3, elapsed: 350.310476ms, retry_timeout: 180s, inner: Http("
    "HttpError { kind: Interrupted, source: reqwest::Error { kind: Request, source: hyper_util::client::"
    "legacy::Error(SendRequest, hyper::Error(Io, Os { code: 104, kind: ConnectionReset, message: "
    '"Connection reset by peer" })) } }) }) } }'
)
CUT = (
    "RetryError(RetryErrorImpl { retries: 3, max_retries: 3, elapsed: 479.3ms, retry_timeout: 180s, inner: "
    "Http(HttpError { kind: Request, source: reqwest::Error { kind: Request, source: hyper_util::client::"
    "legacy::Error(SendRequest, hyper::Error(IncompleteMessage)) } }) })"
)


def test_a_store_that_answered_with_an_error_or_cut_the_line_is_not_named_a_stall() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listening:
        store = _store(listening.getsockname()[1])
        assert classify(RuntimeError(STATUS_READ), store) == Failure(
            FailureKind.ERROR_STATUS, "500 Internal Server Error"
        )
        assert failure_reason(RuntimeError(STATUS_WRITE), store) == (
            "the storage answered with an error (HTTP 503 Service Unavailable); "
            "check the store, then try again"
        )
        dropped = (
            "the connection to the storage was dropped before it answered; check the network and the store, "
            "then try again"
        )
        for said in (RESET, CUT):
            assert classify(RuntimeError(said), store).kind is FailureKind.DROPPED
            assert failure_reason(RuntimeError(said), store) == dropped
    # Neither is the store's definite no: a write that failed so may have landed, and is asked about.
    for said in (STATUS_READ, RESET):
        assert not is_refusal(RuntimeError(said))
    assert is_refusal(OSError(28, "No space left on device"))
    # A 403 is a denial, however the client words it.
    assert classify(RuntimeError("Status { status: 403, body: None }")).kind is FailureKind.DENIED


def test_decisions_follow_the_kind_not_the_words() -> None:
    # A failure already classified keeps its kind whatever its line says.
    error = StorageError("database 'x' cannot be written: the disk is full", Failure(FailureKind.STALLED))
    assert classify(error) == Failure(FailureKind.STALLED)
    worded_as_a_stall = RuntimeError("the storage did not answer within 2 s; raise timeout_seconds")
    assert kind_of(worded_as_a_stall) is None
