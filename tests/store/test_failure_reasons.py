"""How a request to an object store that got no answer is named: refused, stalled, or not sent."""

from __future__ import annotations

import socket

from haiku_cli.store.handle import failure_reason
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
