"""The chat's host loop, without any UI: one question is one agent run over a saved session.

Each run works on a copy of the session's capability state. Only a run that finishes is saved, together
with its messages, in one atomic write; a run that fails or is cancelled leaves the session (in memory and
on disk) exactly as it was, so the next question simply continues the conversation.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import AsyncIterable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import AgentStreamEvent, PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
from pydantic_ai.models import Model

from haiku_cli.agents import ask as ask_agent
from haiku_cli.agents.answer_results import AskResult
from haiku_cli.agents.model_names import model_name
from haiku_cli.agents.models import model_errors, resolve_model
from haiku_cli.agents.question import build_agent, collect
from haiku_cli.capabilities.analysis import AnalysisCapability, AnalysisState
from haiku_cli.capabilities.compaction import EvidenceCompaction
from haiku_cli.capabilities.evidence import EvidenceCapability, set_scope
from haiku_cli.capabilities.retrieval import RetrievalCapability
from haiku_cli.capabilities.scope import ScopeError, host_selection, question_selection, sources_of
from haiku_cli.capabilities.state import HaikuDeps, Source
from haiku_cli.chat.sessions import Seal, Session, SessionStore, Turn, check_name, new_name
from haiku_cli.databases.selection import Selection, searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError

TextSink = Callable[[str], None]

CONVERSATION = " This is a conversation: a question may refer to earlier questions and answers."
ANALYSIS = (
    " When a question needs counting, comparing or tabulating across many documents, load the `analysis` "
    "capability and compute the answer with `execute_code` rather than guessing from a few search results."
)


def chat_evidence(
    ws: Workspace, *, analysis: bool, scope: Sequence[Source] = (), document_filter: str | None = None
) -> list[EvidenceCapability]:
    """Retrieval, and with `analysis` the sandbox too, over the host's `scope`; the model chooses."""
    retrieval = RetrievalCapability(
        ws, budget=ws.settings.model.search_budget, scope=tuple(scope), document_filter=document_filter
    )
    # Retrieval first, so it serves `search` and `cite` (and keeps their records) with or without analysis:
    # a session can then be resumed with or without --analysis. Analysis is deferred: most questions only
    # search, and its instructions then cost nothing (benchmarks/deferred.py); one that computes loads it.
    found: list[EvidenceCapability] = [retrieval]
    if analysis:
        found.append(
            AnalysisCapability(
                ws,
                budget=retrieval.budget,
                scope=retrieval.scope,
                document_filter=document_filter,
                defer_loading=True,
            )
        )
    return found


def conversation_capabilities(*, analysis: bool) -> list[AbstractCapability[HaikuDeps]]:
    """What a multi-turn host adds to the evidence capabilities (single-shot `ask` does not).

    A session resumed without --analysis still compacts the program output of its earlier questions.
    """
    return [EvidenceCompaction(unregistered={} if analysis else {"analysis": AnalysisState})]


class ChatHost:
    """A conversation over one session: ask questions, clear it, read what was cited."""

    def __init__(
        self,
        ws: Workspace,
        session: Session,
        model: Model,
        *,
        label: str,
        analysis: bool = False,
        store: SessionStore | None = None,
        compaction: bool = True,
    ) -> None:
        self.ws = ws
        self.session = session
        self.store = store if store is not None else SessionStore()
        self.model = model
        self.label = label
        self.generated_name = False
        self.kept: list[Session] = []  # the answered sessions `clear` left, oldest first
        # The session's scope was checked against the configuration (and command line) when it was opened.
        self.evidence = chat_evidence(
            ws, analysis=analysis, scope=session.sources, document_filter=session.document_filter
        )
        instructions = ask_agent.INSTRUCTIONS + CONVERSATION + (ANALYSIS if analysis else "")
        # `run()` with an event handler can retry, and the stream handler replaces a redirected draft.
        # `compaction=False` exists to measure what compaction saves (benchmarks/chat_requests.py).
        added = conversation_capabilities(analysis=analysis) if compaction else []
        self.agent = build_agent(
            [*self.evidence, *added],
            model,
            instructions,
            settings=ws.settings.model,
            streamed_redirect="after",
        )

    @classmethod
    async def open(
        cls,
        ws: Workspace,
        selection: Selection | None = None,
        *,
        session: str | None = None,
        model: str | Model | None = None,
        document_filter: str | None = None,
        analysis: bool = False,
        rescope: bool = False,
        store: SessionStore | None = None,
        compaction: bool = True,
    ) -> ChatHost:
        """Start or resume a session; `selection` None keeps a resumed session's databases.

        A resumed session asked to cover other databases (or another filter) is refused unless
        `rescope`; a missing model or an unopenable database fails here, before any question.
        """
        store = store if store is not None else SessionStore()
        chosen = resolve_model(ws.settings.model, model)
        label = chosen.model_name if isinstance(model, Model) else model_name(ws.settings.model, model)
        name = check_name(session) if session is not None else _unused_name(store)
        if session is not None and store.exists(name):
            loaded = _scope_checked(store, store.load(name), selection, rescope=rescope)
            saved = _rescoped(ws, loaded, selection, document_filter, rescope=rescope)
        else:
            scope = selection if selection is not None else ws.select_many()
            saved = Session.start(name, sources_of(ws, scope), document_filter)
        # Open the databases now: a missing one should fail before the first question, not during it.
        # A local one nothing was added to yet is left out until it is written (as `search` does).
        scope = _checked(ws, saved, selection)
        await ws.pool.clients_covering((await _searchable(scope))[0])
        if session is None:
            saved = store.save(saved)  # claim the generated name, so a chat started alongside picks another
        host = cls(ws, saved, chosen, label=label, analysis=analysis, store=store, compaction=compaction)
        host.generated_name = session is None
        return host

    @property
    def selection(self) -> Selection:
        """The databases this conversation covers."""
        return host_selection(self.ws, self.session.sources)

    async def ask(self, question: str, on_text: TextSink | None = None) -> AskResult:
        """Answer one question in the conversation; `on_text` receives the text streamed so far.

        The session advances (and is saved) only when the answer is complete.
        """
        if not question.strip():
            raise InputError("the question is empty")
        # Each question covers the session's databases that exist now: one written since the session
        # started joins it, one not written yet is skipped and named.
        searched, not_created = await _searchable(self.selection)
        deps = HaikuDeps.restore(copy.deepcopy(self.session.state))
        set_scope(deps, self.evidence, sources_of(self.ws, searched))
        history = self.session.history()
        with model_errors(self.label, self.model.base_url, self.ws.settings.model.timeout_seconds):
            result = await self.agent.run(
                question,
                message_history=history or None,
                deps=deps,
                event_stream_handler=_streamer(on_text) if on_text is not None else None,
            )
        answered = collect(result.output, [cap.evidence(deps) for cap in self.evidence], result.usage, deps)
        turn = Turn(
            question=question,
            answer=answered.answer,
            grounded=answered.grounded,
            citations=answered.citations,
            asked_at=datetime.now(UTC),
        )
        self.session = self.store.save(self.session.answered(turn, result.all_messages(), answered.state))
        return answered.model_copy(update={"databases": searched.names, "not_created": not_created})

    def close(self) -> None:
        """Leave the conversation: a session haiku named and nothing was asked in is not kept.

        Only a file with no answered question is removed (see `SessionStore.discard_unanswered`).
        """
        if self.generated_name and not self.session.turns:
            self.store.discard_unanswered(self.session.name)

    def clear(self) -> Session | None:
        """Start a new session over the same scope; the current one is kept whole and returned.

        A session with nothing answered yet is already a new conversation: it is kept as it is and
        None is returned. The new session is saved at once under a name haiku chooses.
        """
        if not self.session.turns:
            return None
        kept = self.session
        fresh = Session.start(_unused_name(self.store), kept.sources, kept.document_filter)
        self.session = self.store.save(fresh)
        self.generated_name = True
        self.kept.append(kept)
        return kept


class SessionAnswer(AskResult):
    """An answer given in a session: `ask`'s result (whose `databases` are the session's) plus the session."""

    session: str


async def ask_in_session(
    ws: Workspace,
    selection: Selection | None,
    question: str,
    *,
    session: str,
    model: str | Model | None = None,
    document_filter: str | None = None,
    rescope: bool = False,
    store: SessionStore | None = None,
) -> SessionAnswer:
    """`ask` continuing (or starting) the named session: one question, saved when answered."""
    host = await ChatHost.open(
        ws,
        selection,
        session=session,
        model=model,
        document_filter=document_filter,
        rescope=rescope,
        store=store,
    )
    answered = await host.ask(question)
    return SessionAnswer(**dict(answered), session=host.session.name)


async def _searchable(selection: Selection) -> tuple[Selection, list[str]]:
    return await anyio.to_thread.run_sync(lambda: searchable(selection))


def _checked(ws: Workspace, saved: Session, selection: Selection | None) -> Selection:
    """The session's databases, if the user may reach them: a session file is data anyone may edit.

    The user's reach is the command line's databases, else every configured one; a session started
    with `--db PATH` is resumed by giving that path again.
    """
    allowed = sources_of(ws, selection if selection is not None else ws.select_many())
    try:
        return question_selection(ws, allowed, saved.sources)
    except ScopeError:
        outside = [s for s in saved.sources if s not in allowed]
        by_path = next((s for s in outside if s.path is not None), None)
        if by_path is not None:
            raise InputError(
                f"session '{saved.name}' covers the database '{by_path.name}' by path ({by_path.path}), "
                f"which is not configured: resume it with --db {shlex.quote(by_path.path or '')}"
            ) from None
        raise InputError(
            f"session '{saved.name}' covers the database '{outside[0].name}', which is not configured "
            f"({', '.join(s.name for s in allowed)}); resume it with --database NAME --rescope"
        ) from None


def _scope_checked(
    store: SessionStore, saved: Session, selection: Selection | None, *, rescope: bool
) -> Session:
    """The session, if what it covers is what haiku saved it with (or the user rescopes it).

    Resuming covers exactly the databases the session was started with: a file whose databases or
    filter were edited (or which names none) would otherwise widen what the conversation searches.
    """
    seal = store.seal_check(saved)
    if seal is not Seal.INTACT and not rescope:
        covers = _describe(saved.sources, saved.document_filter)
        why = {
            Seal.EDITED: f"was changed outside haiku: its file now covers {covers}, not what haiku saved",
            Seal.UNSEALED: f"has no seal of what it covers (written by an older haiku, or the seal "
            f"removed): its file names {covers}",
            Seal.NO_KEY: f"cannot be checked, as the key sealing sessions ({store.key_path}) is gone: "
            f"its file names {covers}",
        }[seal]
        raise InputError(
            f"session '{saved.name}' {why}; resume it with --rescope to accept that, "
            "or --database NAME --rescope to choose"
        )
    if not saved.sources and selection is None:
        raise InputError(
            f"session '{saved.name}' names no database; resume it with --database NAME --rescope"
        )
    return saved


def _unused_name(store: SessionStore) -> str:
    base = new_name()
    name, n = base, 1
    while store.exists(name):
        n += 1
        name = f"{base}-{n}"
    return name


def _rescoped(
    ws: Workspace,
    saved: Session,
    selection: Selection | None,
    document_filter: str | None,
    *,
    rescope: bool,
) -> Session:
    if selection is None and document_filter is None:
        return saved
    sources = sources_of(ws, selection) if selection is not None else saved.sources
    wanted_filter = document_filter if document_filter is not None else saved.document_filter
    if saved.same_scope(sources, wanted_filter):
        return saved
    if rescope:
        return saved.rescoped(sources, wanted_filter)
    raise InputError(
        f"session '{saved.name}' covers {_describe(saved.sources, saved.document_filter)}, "
        f"not {_describe(sources, wanted_filter)}; resume it without --database/--db/--filter, "
        "or add --rescope to change what it covers"
    )


def _describe(sources: Sequence[Source], document_filter: str | None) -> str:
    names = ", ".join(s.name for s in sources) or "no database"
    return f"{names} (filter {document_filter!r})" if document_filter else names


def _streamer(sink: TextSink) -> Callable[[RunContext[HaikuDeps], AsyncIterable[AgentStreamEvent]], Any]:
    async def handler(ctx: RunContext[HaikuDeps], events: AsyncIterable[AgentStreamEvent]) -> None:
        # Called once per model response: its text restarts, so a redirected answer is replaced.
        text = ""
        async for event in events:
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                text += event.part.content
            elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                text += event.delta.content_delta
            else:
                continue
            sink(text)

    return handler
