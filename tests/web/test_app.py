"""`haiku serve`'s server in-process: AG-UI runs with the chat's capabilities, and what it refuses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls

from haiku_cli.capabilities.compaction import CAPSULE_HEADING
from haiku_cli.capabilities.policy import QUOTE_TAG
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import ModelError
from haiku_cli.web.app import WebApp
from haiku_cli.web.runs import MAX_STATE_BYTES
from haiku_cli.web.welcome import GENERIC, examples
from tests.capabilities.conftest import kb, kb_template
from tests.capabilities.script import Step, call, chunk_ids, cite_first, returns, search, text
from tests.chat.streaming import StreamScript
from tests.chat.test_host import grounded

__all__ = ["kb", "kb_template"]

LOCAL = {"host": "127.0.0.1:8780"}


def request(
    app: WebApp, method: str, path: str, *, token: str | None = None, **kwargs: Any
) -> httpx.Response:
    """One request to the app as the browser on this machine sends it."""

    async def go() -> httpx.Response:
        asgi = app.routes(["127.0.0.1", "localhost", "[::1]"], token)
        transport = httpx.ASGITransport(app=asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8780") as client:
            headers = {**LOCAL, **kwargs.pop("headers", {})}
            return await client.request(method, path, headers=headers, **kwargs)

    return anyio.run(go)


def open_app(ws: Workspace, script: StreamScript, names: Sequence[str] = ("notes",)) -> WebApp:
    return anyio.run(lambda: WebApp.open(ws, ws.select_many(list(names)), script.model))


def events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


def run_input(messages: list[dict[str, Any]], state: Any = None) -> dict[str, Any]:
    return {
        "threadId": "t",
        "runId": "r",
        "state": state,
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def question(text_: str, n: int = 1) -> dict[str, Any]:
    return {"id": f"u{n}", "role": "user", "content": text_}


def of_type(found: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in found if e["type"] == kind]


def test_a_question_streams_and_returns_the_whole_conversation(kb: Workspace) -> None:
    script = StreamScript(search("capital of France"), cite_first(), text("The capital is **Paris** [1]."))
    app = open_app(kb, script)
    found = events(request(app, "POST", "/api/agui", json=run_input([question("Capital of France?")])))
    assert (
        "".join(e["delta"] for e in of_type(found, "TEXT_MESSAGE_CONTENT")) == "The capital is **Paris** [1]."
    )
    [custom] = of_type(found, "CUSTOM")
    [citation] = custom["value"]["citations"]
    assert (citation["index"], citation["database"], citation["document_title"]) == (1, "notes", "France")
    [messages] = of_type(found, "MESSAGES_SNAPSHOT")
    [state] = of_type(found, "STATE_SNAPSHOT")
    assert state["snapshot"]["retrieval"]["answer"] == 1

    # The follow-up sends both back: the same conversation continues, its earlier citation still known.
    again = StreamScript(search("Seine river"), cite_first(), text("The Seine [1]."))
    app = open_app(kb, again)
    history = [*messages["messages"], question("And its river?", 2)]
    found = events(request(app, "POST", "/api/agui", json=run_input(history, state["snapshot"])))
    assert not of_type(found, "RUN_ERROR")
    [state] = of_type(found, "STATE_SNAPSHOT")
    assert state["snapshot"]["retrieval"]["answer"] == 2
    # Compacted as in `haiku chat`: the first question's search results go out as a receipt only.
    [earlier] = returns(again.seen[0], "search")
    assert earlier.startswith("[Search ") and CAPSULE_HEADING in earlier


def test_with_analysis_the_programs_come_back_in_the_conversation(kb: Workspace) -> None:
    program = "print(len(list_documents()))"
    script = StreamScript(
        call(("load_capability", {"id": "analysis"})),
        call(("execute_code", {"code": program})),
        *grounded("capital of France", "Four documents; Paris [1]."),
    )
    app = anyio.run(lambda: WebApp.open(kb, kb.select_many(), script.model, analysis=True))
    assert request(app, "GET", "/api/info").json()["state_keys"] == ["retrieval", "analysis"]
    found = events(request(app, "POST", "/api/agui", json=run_input([question("How many, and France?")])))
    [messages] = of_type(found, "MESSAGES_SNAPSHOT")
    calls = {c["id"]: c["function"] for m in messages["messages"] for c in m.get("toolCalls") or []}
    [ran] = [i for i, f in calls.items() if f["name"] == "execute_code"]
    assert json.loads(calls[ran]["arguments"]) == {"code": program}
    [output] = [m["content"] for m in messages["messages"] if m.get("toolCallId") == ran]
    assert output.endswith("4")


@pytest.mark.parametrize(
    ("state", "says"),
    [
        ({"retrieval": {"sources": [{"name": "papers"}]}}, "outside this host's databases (notes)"),
        ({"retrieval": {"sources": [{"name": "nowhere"}]}}, "nowhere"),
        ({"retrieval": "tampered"}, "retrieval"),
        ("a string", "state must be an object"),
        ({"retrieval": {"pad": "x" * (MAX_STATE_BYTES + 1)}}, "larger than"),
    ],
    ids=["other-database", "unknown-database", "not-a-state", "not-an-object", "oversized"],
)
def test_bad_state_is_one_error_event_and_the_server_keeps_serving(
    kb: Workspace, state: Any, says: str
) -> None:
    script = StreamScript(search("capital"), cite_first(), text("Paris [1]."))
    app = open_app(kb, script)
    found = events(request(app, "POST", "/api/agui", json=run_input([question("Capital?")], state)))
    [error] = of_type(found, "RUN_ERROR")
    assert says in error["message"]
    assert script.seen == [] and not of_type(found, "STATE_SNAPSHOT")
    # The same server answers the next (good) request.
    found = events(request(app, "POST", "/api/agui", json=run_input([question("Capital?")])))
    assert of_type(found, "STATE_SNAPSHOT") and not of_type(found, "RUN_ERROR")


@pytest.mark.parametrize(
    "body", [b"not json", b'{"threadId": 3}', json.dumps(run_input([{"role": "nobody"}])).encode()]
)
def test_a_malformed_ag_ui_request_is_one_error_event(kb: Workspace, body: bytes) -> None:
    script = StreamScript(text("never"))
    response = request(open_app(kb, script), "POST", "/api/agui", content=body)
    [error] = events(response)
    assert response.status_code == 400 and error["type"] == "RUN_ERROR"
    assert error["message"].startswith("malformed AG-UI request")
    assert script.seen == []


def test_a_picked_database_narrows_within_the_servers_set(kb: Workspace) -> None:
    script = StreamScript(search("photosynthesis light"), cite_first(), text("Chloroplasts [1]."))
    app = open_app(kb, script, ["notes", "papers"])
    assert [d["name"] for d in request(app, "GET", "/api/info").json()["databases"]] == ["notes", "papers"]
    narrowed = {"retrieval": {"sources": [{"name": "notes", "path": None}]}}
    found = events(request(app, "POST", "/api/agui", json=run_input([question("Light?")], narrowed)))
    [custom] = of_type(found, "CUSTOM")
    assert {c["database"] for c in custom["value"]["citations"]} == {"notes"}


def test_a_citation_opens_its_document_within_the_servers_databases(kb: Workspace) -> None:
    app = open_app(kb, StreamScript())
    doc_id = kb_doc_id(kb, "notes")
    found = request(app, "GET", f"/api/document?database=notes&document={doc_id}")
    assert found.status_code == 200 and found.json()["chunks"]
    refused = request(app, "GET", f"/api/document?database=papers&document={doc_id}")
    assert refused.status_code == 400 and "unknown database 'papers'" in refused.json()["error"]


def kb_doc_id(ws: Workspace, name: str) -> str:
    from haiku_cli import api

    listed = anyio.run(lambda: api.list_documents(ws, ws.select_many([name]).locations[0]))
    return listed.documents[0].id


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "evil.example:8780"}, 403),
        ({"origin": "http://evil.example"}, 403),
        ({"origin": "http://localhost:5000"}, 200),
    ],
)
def test_other_sites_are_refused(kb: Workspace, headers: dict[str, str], status: int) -> None:
    app = open_app(kb, StreamScript())
    assert request(app, "GET", "/api/info", headers=headers).status_code == status


def test_with_a_token_the_api_needs_it_and_the_page_does_not(kb: Workspace, tmp_path: Path) -> None:
    app = open_app(kb, StreamScript())
    token = "a-long-enough-secret-token"
    assert request(app, "GET", "/", token=token).status_code == 200
    assert "AG-UI" in request(app, "GET", "/static/app.js", token=token).text
    assert request(app, "GET", "/api/info", token=token).status_code == 401
    bearer = {"authorization": f"Bearer {token}"}
    assert request(app, "GET", "/api/info", token=token, headers=bearer).status_code == 200


class Watched(StreamScript):
    """`StreamScript` noting, as each streamed piece is generated, how many text deltas the page had."""

    def __init__(self, *steps: Step, page: list[str]) -> None:
        super().__init__(*steps)
        self.page = page
        self.page_had: list[int] = []  # for each piece of the last streamed response, before it was made

    async def _stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        self.page_had = []
        async for piece in super()._stream(messages, info):
            self.page_had.append(len(self.page))
            yield piece


def streamed_events(app: WebApp, body: dict[str, Any], page: list[str]) -> list[dict[str, Any]]:
    """POST one AG-UI request to serve's handler and read its event stream as the page does, piece by
    piece: each text delta is added to `page` as soon as it arrives."""

    async def go() -> list[dict[str, Any]]:
        from starlette.requests import Request

        payload = json.dumps(body).encode()
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": payload, "more_body": False}

        headers = [(b"accept", b"text/event-stream"), (b"content-type", b"application/json")]
        scope = {"type": "http", "method": "POST", "path": "/api/agui", "headers": headers}
        response = await app.conversations.respond(Request(scope, receive))
        found: list[dict[str, Any]] = []
        async for chunk in response.body_iterator:  # type: ignore[attr-defined]
            text_ = chunk if isinstance(chunk, str) else bytes(chunk).decode()
            for line in text_.splitlines():
                if line.startswith("data:"):
                    event = json.loads(line[5:])
                    found.append(event)
                    if event["type"] == "TEXT_MESSAGE_CONTENT":
                        page.append(event["delta"])
        return found

    return anyio.run(go)


INVENTED = 'The note says "Paris has been the capital since the year 987" [1], and more words follow here.'
VERIFIED = 'The note says "the capital of France is Paris" [1], and more words follow here.'


def test_an_answer_streams_to_the_page_while_the_model_is_still_writing_it(kb: Workspace) -> None:
    page: list[str] = []
    script = Watched(search("capital of France"), cite_first(), text(VERIFIED), page=page)
    found = streamed_events(open_app(kb, script), run_input([question("Capital of France?")]), page)
    # The answer's last word was generated after the page had shown its first ones (held whole, the page
    # would have had nothing until the model finished).
    assert len(script.page_had) > 10 and script.page_had[-1] > 0
    assert "".join(page) == VERIFIED and len(script.seen) == 3 and not of_type(found, "RUN_ERROR")


def test_an_answer_quoting_what_its_citation_does_not_hold_streams_and_is_flagged(kb: Workspace) -> None:
    page: list[str] = []
    script = Watched(search("capital of France"), cite_first(), text(INVENTED), page=page)
    found = streamed_events(open_app(kb, script), run_input([question("Capital of France?")]), page)
    # Never sent back (the page has shown it): three requests, no quote redirect, the one answer streamed.
    assert len(script.seen) == 3 and QUOTE_TAG not in str(script.seen[-1]) and "".join(page) == INVENTED
    [custom] = of_type(found, "CUSTOM")
    quote = "Paris has been the capital since the year 987"
    assert [(q["text"], q["verified"]) for q in custom["value"]["quotes"]] == [(quote, False)]
    [state] = of_type(found, "STATE_SNAPSHOT")
    assert [(q["text"], q["verified"]) for q in state["snapshot"]["citation_policy"]["quotes"]] == [
        (quote, False)
    ]
    # A quote the cited chunk holds is reported verified.
    page = []
    script = Watched(search("capital of France"), cite_first(), text(VERIFIED), page=page)
    found = streamed_events(open_app(kb, script), run_input([question("Capital of France?")]), page)
    [custom] = of_type(found, "CUSTOM")
    assert [(q["verified"], q["chunk"]) for q in custom["value"]["quotes"]] == [
        (True, chunk_ids(script.seen[-1])[0])
    ]


def test_a_follow_up_narrowed_in_the_picker_is_offered_only_its_databases_chunks(kb: Workspace) -> None:
    first = StreamScript(search("mitochondria ATP cells"), cite_first(), text("ATP [1]."))
    app = open_app(kb, first, ["notes", "papers"])
    found = events(request(app, "POST", "/api/agui", json=run_input([question("What makes ATP?")])))
    [custom] = of_type(found, "CUSTOM")
    [cells] = custom["value"]["citations"]
    assert cells["database"] == "papers"
    [messages] = of_type(found, "MESSAGES_SNAPSHOT")
    [state] = of_type(found, "STATE_SNAPSHOT")
    narrowed = state["snapshot"]
    narrowed["retrieval"]["sources"] = [{"name": "notes", "path": None}]  # one tick off in the picker
    history = [*messages["messages"], question("And the capital of France?", 2)]
    again = StreamScript(
        call(("cite", {"chunk_ids": [cells["chunk_id"]]})),
        search("capital of France"),
        cite_first(),
        text("Paris [1]."),
    )
    found = events(
        request(
            open_app(kb, again, ["notes", "papers"]), "POST", "/api/agui", json=run_input(history, narrowed)
        )
    )
    assert not of_type(found, "RUN_ERROR")
    [capsule] = [r for r in returns(again.seen[0], "search") if CAPSULE_HEADING in r]
    assert cells["chunk_id"] not in capsule and cells["content"] not in capsule
    assert "[Cited from the database papers, which this question does not cover: Cells" in capsule
    assert (
        "is a chunk of the database papers, which this question does not cover"
        in returns(again.seen[1], "cite")[-1]
    )
    [custom] = of_type(found, "CUSTOM")
    assert custom["value"]["grounded"] and {c["database"] for c in custom["value"]["citations"]} == {"notes"}

    # A client that keeps the evidence states but drops the policy's is refused, as for the others.
    dropped = {k: v for k, v in state["snapshot"].items() if k != "citation_policy"}
    refused = events(
        request(
            open_app(kb, StreamScript(text("Paris.")), ["notes", "papers"]),
            "POST",
            "/api/agui",
            json=run_input(history, dropped),
        )
    )
    [error] = of_type(refused, "RUN_ERROR")
    assert "deps.state['citation_policy'] has no record" in error["message"]


def test_info_says_what_is_in_scope_with_example_questions_from_the_titles(kb: Workspace) -> None:
    app = open_app(kb, StreamScript(), ["notes", "papers"])
    welcome = request(app, "GET", "/api/info").json()["welcome"]
    assert welcome["databases"] == [
        {"name": "notes", "documents": 2, "chunks": 2, "error": None},
        {"name": "papers", "documents": 2, "chunks": 2, "error": None},
    ]
    assert welcome["examples"] == [
        "What is \u201cFrance\u201d about?",
        "What are the key points of \u201cPlants\u201d?",
        "What topics do these documents cover?",
    ]
    # Fewer titles to go by: questions that fit any collection make up the rest.
    assert examples(["Plants"]) == ["What is \u201cPlants\u201d about?", *GENERIC[:2]]
    assert examples([]) == list(GENERIC)


def test_a_model_without_its_key_is_refused_on_each_question_not_at_start(
    kb: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    app = anyio.run(lambda: WebApp.open(kb, kb.select_many(["notes"]), "openai-chat:gpt-4o"))
    for _ in range(2):
        response = request(app, "POST", "/api/agui", json=run_input([question("Capital?")]))
        assert response.status_code == 503
        [error] = of_type(events(response), "RUN_ERROR")
        assert error["message"] == (
            "cannot use model 'openai-chat:gpt-4o': set the OPENAI_API_KEY environment variable (or, for an "
            "OpenAI-compatible server that needs no key, OPENAI_BASE_URL or [model] base_url); "
            "then restart haiku serve"
        )
    assert request(app, "GET", "/api/info").status_code == 200


def test_an_unknown_model_provider_is_refused_at_start(kb: Workspace) -> None:
    with pytest.raises(ModelError, match="unknown model provider 'nonsense'"):
        anyio.run(lambda: WebApp.open(kb, kb.select_many(["notes"]), "nonsense:gpt-4o"))
