"""One AG-UI request, one question: the chat's capabilities behind pydantic-ai's `AGUIAdapter`.

The server keeps nothing: the browser holds the conversation (messages and the whole capability state)
and sends it with each question. What it sends may narrow the server's databases, never widen them (the
scope lives on the capabilities), and anything unusable is answered with one `RUN_ERROR` event.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    EventType,
    MessagesSnapshotEvent,
    RunErrorEvent,
    StateSnapshotEvent,
)
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai.run import AgentRunResult
from pydantic_ai.ui.ag_ui import AGUIAdapter

from haiku_cli.agents import ask as ask_agent
from haiku_cli.agents.question import build_agent, collect
from haiku_cli.capabilities.evidence import EvidenceCapability
from haiku_cli.capabilities.policy import PolicyState
from haiku_cli.capabilities.state import HaikuDeps, Source
from haiku_cli.chat.host import ANALYSIS, CONVERSATION, chat_evidence, conversation_capabilities
from haiku_cli.databases.workspace import Workspace
from haiku_cli.web.model import UnavailableModel

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from starlette.requests import Request
    from starlette.responses import Response

# A conversation's messages and state travel with every question; these bound what one request may hold.
MAX_REQUEST_BYTES = 16 * 1024 * 1024
MAX_STATE_BYTES = 2 * 1024 * 1024
CITATIONS_EVENT = "haiku.citations"


class Conversations:
    """The agent every question runs: retrieval (and deferred analysis), compaction and the citation policy
    over the server's databases, as `haiku chat` composes them."""

    def __init__(self, ws: Workspace, scope: Sequence[Source], model: Model, *, analysis: bool) -> None:
        self.scope = tuple(scope)
        self.model = model
        self.evidence: list[EvidenceCapability] = chat_evidence(ws, analysis=analysis, scope=self.scope)
        instructions = ask_agent.INSTRUCTIONS + CONVERSATION + (ANALYSIS if analysis else "")
        # streamed_redirect "before": a draft the policy sends back is held, so it never reaches the page.
        # quotes "flag": an answer is never sent back for its quotes, so it streams to the page word by
        # word (holding every answer to check them first cost the page its live answers); an unverified
        # quote is shown flagged under the answer instead.
        self.agent: Agent[HaikuDeps, str] = build_agent(
            [*self.evidence, *conversation_capabilities(analysis=analysis)],
            model,
            instructions,
            settings=ws.settings.model,
            quotes="flag",
        )

    @property
    def state_keys(self) -> list[str]:
        """The state keys whose `sources` narrow a question (every evidence capability's, alike)."""
        return [_key(cap) for cap in self.evidence]

    async def respond(self, request: Request) -> Response:
        """Answer one AG-UI request with its event stream; a refused one gets a single `RUN_ERROR` event."""
        if isinstance(self.model, UnavailableModel):
            # Said on each question, as the server cannot change its environment: restart it once set.
            return refusal(f"{self.model.error}; then restart haiku serve", code="model", status=503)
        body = await _read_limited(request, MAX_REQUEST_BYTES)
        if body is None:
            return refusal(
                f"the conversation is larger than {MAX_REQUEST_BYTES // (1024 * 1024)} MiB; "
                "start a new conversation"
            )
        try:
            run_input = AGUIAdapter.build_run_input(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the body"
            return refusal(f"malformed AG-UI request: {where}: {first['msg']}")
        state = run_input.state
        if state is not None and not isinstance(state, dict):
            return refusal("malformed AG-UI request: state must be an object; start a new conversation")
        if len(json.dumps(state)) > MAX_STATE_BYTES:
            return refusal(
                f"the conversation's state is larger than {MAX_STATE_BYTES // (1024 * 1024)} MiB; "
                "start a new conversation"
            )
        unreadable = self._unreadable(state or {})
        if unreadable is not None:
            return refusal(unreadable)
        adapter = AGUIAdapter(self.agent, run_input=run_input, accept=request.headers.get("accept"))
        deps = HaikuDeps()  # the adapter puts the browser's state in it when the run begins

        async def finished(result: AgentRunResult[str]) -> AsyncIterator[BaseEvent]:
            answered = collect(
                result.output, [cap.evidence(deps) for cap in self.evidence], result.usage, deps
            )
            citations = [c.model_dump(mode="json") for c in answered.citations]
            quotes = [q.model_dump(mode="json") for q in answered.quotes]
            yield CustomEvent(
                name=CITATIONS_EVENT,
                value={
                    "answer": answered.answer,
                    "grounded": answered.grounded,
                    "citations": citations,
                    "quotes": quotes,
                },
            )
            # The browser keeps both: the next question sends them back, a reload resumes from them.
            yield MessagesSnapshotEvent(messages=AGUIAdapter.dump_messages(result.all_messages()))
            yield StateSnapshotEvent(snapshot=deps.dump())

        return adapter.streaming_response(adapter.run_stream(deps=deps, on_complete=finished))

    def _unreadable(self, state: dict[str, Any]) -> str | None:
        """Why a capability could not read its part of the carried state, if it could not (checked before
        the run, so the page gets one line rather than a validation dump from inside it)."""
        probe = HaikuDeps.restore(copy.deepcopy(state))
        readers: list[tuple[str, Callable[[HaikuDeps], object]]] = [
            (_key(cap), cap.evidence) for cap in self.evidence
        ]
        readers.append(("citation_policy", lambda deps: deps.get("citation_policy", PolicyState)))
        for key, read in readers:
            try:
                read(probe)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(part) for part in (key, *first["loc"]))
                return (
                    f"the conversation's state is not haiku's ({where}: {first['msg']}); "
                    "start a new conversation"
                )
        return None


def _key(cap: EvidenceCapability) -> str:
    # Retrieval and analysis name their state key; the base class does not declare one.
    return str(getattr(cap, "state_key", type(cap).__name__))


def refusal(message: str, code: str = "refused", status: int = 400) -> Response:
    """A run that never starts: one `RUN_ERROR` event, as a stream the page reads like any other."""
    from starlette.responses import Response

    event = RunErrorEvent(type=EventType.RUN_ERROR, message=message, code=code)
    return Response(
        EventEncoder().encode(event), status_code=status, media_type="text/event-stream", headers=_NO_CACHE
    )


_NO_CACHE = {"cache-control": "no-store"}


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None once it passes `limit` bytes (read no further)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
