"""The retrieval capability: `search` and `cite` tools over the databases a question is scoped to."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic_ai import RunContext
from pydantic_ai.messages import BinaryContent
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from haiku_cli.capabilities.citations import Citation, clean_ids, resolve_citations
from haiku_cli.capabilities.context import Sent, document_texts, format_results
from haiku_cli.capabilities.evidence import (
    EvidenceCapability,
    declare_ungrounded,
    record_citations,
    record_return,
)
from haiku_cli.capabilities.picture_parts import MAX_PICTURES, keys_in, picture_items
from haiku_cli.capabilities.scope import question_filter, question_selection
from haiku_cli.capabilities.state import (
    EvidenceRef,
    EvidenceState,
    HaikuDeps,
    SearchRecord,
    SentText,
    Source,
    state_of,
)
from haiku_cli.databases import queries
from haiku_cli.databases.freshness import RemoteCheck
from haiku_cli.databases.pictures import PictureKey, fetch_pictures
from haiku_cli.databases.resolve import Resolution, ResolvedChunk
from haiku_cli.databases.selection import Selection
from haiku_cli.databases.workspace import Workspace
from haiku_cli.store.records import PictureRecord

DEFAULT_BUDGET = 5
PER_RESPONSE = 3
DEFAULT_HITS = 5  # per search: enough to choose from, few enough to keep several searches in context


@dataclass(eq=False)
class RetrievalCapability(EvidenceCapability):
    """Search and cite over the question's sources, with a bounded number of search units per answer.

    The host chooses the databases (`scope`: configured names, or databases by path; empty means every
    configured database) and may fix a `document_filter`. Both stay with the capability, never in the
    carried state: the state under `state_key` (which a client can rewrite) may only narrow them, and a
    state asking for more is refused with a `ScopeError`. The workspace supplies the pool and embedder.
    Searches the model emits in one response share a unit (up to `per_response` of them). When several
    of these capabilities share an agent (retrieval and analysis), the first registered serves `search`
    and `cite` for all of them.
    """

    workspace: Workspace = field(repr=False)
    budget: int = DEFAULT_BUDGET
    per_response: int = PER_RESPONSE
    limit: int = DEFAULT_HITS
    state_key: str = "retrieval"
    scope: tuple[Source, ...] = ()  # the host's databases; empty: every configured database
    document_filter: str | None = None  # the host's filter, which carried state cannot replace

    def __post_init__(self) -> None:
        # Deferred loading needs a stable id: the state key names this capability already.
        if self.defer_loading and self.id is None:
            self.id = self.state_key

    def evidence(self, deps: HaikuDeps) -> EvidenceState:
        """The live retrieval state (sources, filter, budget, evidence, citations)."""
        return state_of(deps, self.state_key, EvidenceState)

    def selection(self, deps: HaikuDeps) -> Selection:
        """The databases the question in `deps` covers: the host's scope, narrowed by the carried state."""
        return question_selection(self.workspace, self.scope, self.evidence(deps).sources)

    def covers(self, deps: HaikuDeps) -> list[str] | None:
        """The names of the databases the question in `deps` covers."""
        return self.selection(deps).names

    def question_filter(self, deps: HaikuDeps) -> str | None:
        """The document filter of the question in `deps`: the host's, else the one carried in the state."""
        return question_filter(self.document_filter, self.evidence(deps).document_filter)

    def check_scope(self, deps: HaikuDeps) -> None:
        """Refuse (`ScopeError`) carried sources or a filter outside the host's scope."""
        self.selection(deps)
        self.question_filter(deps)

    def get_toolset(self) -> FunctionToolset[HaikuDeps]:
        """The `search` and `cite` tools, offered only by the first such capability on the agent."""
        toolset = FunctionToolset[HaikuDeps]()
        toolset.add_function(self.search, name="search", prepare=self._if_serving)
        toolset.add_function(self.cite, name="cite", prepare=self._if_serving)
        return toolset

    def serves_search(self, ctx: RunContext[HaikuDeps]) -> bool:
        """Whether this capability serves `search` and `cite` now: the first registered of those active.

        A capability deferred until the model loads it is not active before then, so analysis loaded
        alone serves them even when a deferred retrieval was registered first. While none is active, the
        first registered holds them (hidden until it is loaded), so the tool names never clash.
        """
        active = ctx.active_capability_ids
        registered = [(i, c) for i, c in ctx.capabilities.items() if isinstance(c, RetrievalCapability)]
        first = next((c for i, c in registered if i in active), registered[0][1] if registered else None)
        return first is None or first.state_key == self.state_key

    def evidence_tools(self) -> frozenset[str]:
        """`search` (a `cite` acknowledgement is never evidence)."""
        return frozenset({"search"})

    def get_description(self) -> str:
        """What the model reads in the load catalog when this capability is deferred."""
        return self.description or "Search the user's documents and cite the chunks an answer relies on."

    async def _if_serving(
        self, ctx: RunContext[HaikuDeps], tool_def: ToolDefinition
    ) -> ToolDefinition | None:
        return tool_def if self.serves_search(ctx) else None

    def get_instructions(self) -> Callable[[RunContext[HaikuDeps]], str]:
        """How to search and cite, naming the databases this question covers."""

        def instructions(ctx: RunContext[HaikuDeps]) -> str:
            names = self.selection(ctx.deps).names
            several = len(names) > 1
            labelled = " and names the database it came from" if several else ""
            # A tool a host withholds is never named (the policy's rule is worded likewise).
            cite = (
                "Call `cite` with the ids of the chunks your answer relies on; it tells you the numbers "
                "to write as markers like [1] after the statements they support. "
                if ctx.is_tool_available("cite")
                else ""
            )
            return (
                "Answer from the user's documents, which you reach only through the `search` tool. "
                f"This question covers the database{'s' if several else ''} {', '.join(names)}. "
                f"Each search result begins with its chunk id in square brackets{labelled}. "
                f"{cite}"
                f"You have {self.budget} search units for this answer: searches you request together in "
                f"one response share one unit (at most {self.per_response} of them), and each later "
                "response that searches costs another."
            )

        return instructions

    def sends_images(self, ctx: RunContext[HaikuDeps]) -> bool:
        """Whether pictures go to the model as images: its profile takes them and `[model] images` is on."""
        return super().sends_images(ctx) and self.workspace.settings.model.images

    async def pictures(self, deps: HaikuDeps, keys: Sequence[PictureKey]) -> dict[PictureKey, PictureRecord]:
        """The pictures named by `keys` that the question's databases still hold (missing ones left out)."""
        return await fetch_pictures(self.workspace.pool, self.selection(deps), keys)

    async def search(self, ctx: RunContext[HaikuDeps], query: str) -> str | list[str | BinaryContent]:
        """Search the user's documents; each result starts with its chunk id in square brackets.

        The pictures the results cover follow them, each labelled (and shown, if you can see images).

        Args:
            query: What to look for, in words likely to appear in the documents.
        """
        state = self.evidence(ctx.deps)
        if not query.strip():
            return "The query is empty: search for some words."
        # Charge before any await: searches of one response run concurrently and must see each other.
        spent = state.spend_search(ctx.run_step, budget=self.budget, per_response=self.per_response)
        if spent == "exhausted":
            return (
                f"Search limit reached: all {self.budget} search units of this answer are spent. "
                "Answer from what you have found so far."
            )
        if spent == "response_full":
            return f"At most {self.per_response} searches per response; this one was not run."
        selection = self.selection(ctx.deps)
        synced = await _sync_first(self.workspace, selection)
        hits = await queries.search_hits(
            self.workspace,
            selection,
            query,
            search_type="auto",
            limit=self.limit,
            document_filter=self.question_filter(ctx.deps),
        )
        refs = [EvidenceRef(database=h.database, chunk_id=h.chunk_id) for h in hits]
        state.saw(refs)
        state.searches.append(SearchRecord(**record_return(ctx, state), query=query, results=refs))
        context_chars = self.workspace.settings.search.context_chars
        texts = await document_texts(self.workspace.pool, selection, hits) if context_chars else {}
        # From here to storing it back, no await: searches of one response run concurrently.
        sent = sent_of(state)
        earlier = set(sent.chunks)
        text = format_results(
            query,
            hits,
            texts,
            show_database=len(selection.locations) > 1,
            units_left=state.units_left(self.budget),
            context_chars=context_chars,
            sent=sent,
        )
        keep_sent(state, sent)
        if synced:
            text = "Before this search: " + "; ".join(synced) + ".\n\n" + text
        # The pictures of hits shown by an earlier search of this answer went out with them then.
        new = [h for h in hits if (h.database, h.chunk_id) not in earlier]
        keys = keys_in((h.database, h.document_id, h.content) for h in new)[:MAX_PICTURES]
        found = await self.pictures(ctx.deps, keys) if keys else {}
        if not found:
            return text
        titles = {(h.database, h.document_id): h.document_title for h in hits}
        shown = [(k, found[k], titles.get((k.database, k.document_id))) for k in keys if k in found]
        return [text, *picture_items(shown, images=self.sends_images(ctx))]

    async def cite(self, ctx: RunContext[HaikuDeps], chunk_ids: list[str], quote: str | None = None) -> str:
        """Cite the chunks that support your answer, or declare that the documents do not support it.

        Args:
            chunk_ids: Ids of the supporting chunks, exactly as shown in square brackets in search results.
                An empty list declares the answer ungrounded: the documents do not say.
            quote: Optionally, a passage copied word for word from the cited chunks; it is checked
                against them.
        """
        state = self.evidence(ctx.deps)
        if quote and quote.strip() and chunk_ids:
            state.quotes.append(quote.strip())
        if not chunk_ids:
            declare_ungrounded(ctx, state)
            if state.citations:
                # Declarations merge: `cite([])` never withdraws what this answer already cites.
                marks = ", ".join(f"[{c.index}]" for c in state.citations)
                return (
                    f"Noted: nothing more is supported. The answer keeps its citations {marks}; "
                    "say plainly which parts the documents do not support."
                )
            return (
                "Recorded: this answer is not grounded in the documents. "
                "Say plainly that the documents do not say, and do not present outside knowledge as theirs."
            )
        ids = clean_ids(chunk_ids)
        if not ids:
            return "No chunk ids given: pass ids from search results, or an empty list to declare no support."
        selection = self.selection(ctx.deps)
        remote = RemoteCheck(self.workspace.settings) if self.workspace.check_remote else None
        resolution = await resolve_citations(self.workspace.pool, selection, ids, remote)
        found = [resolution.found[i] for i in ids if i in resolution.found]
        citations = record_citations(ctx, state, found)
        return cite_report(citations, resolution, outside=_cited_outside(state, selection.names))


async def _sync_first(ws: Workspace, selection: Selection) -> list[str]:
    """`haiku serve --sync-before-search`: sync the sources whose files changed first; what was done."""
    if not ws.sync_before_search:
        return []
    from haiku_cli.databases.refreshing import sync_before_search  # the write path, loaded only when on

    return await sync_before_search(ws, selection)


def sent_of(state: EvidenceState) -> Sent:
    """What this answer's searches have sent the model so far, from the carried state."""
    return Sent(
        ranges={(t.database, t.document_id): list(t.ranges) for t in state.sent_text},
        chunks={(r.database, r.chunk_id) for r in state.sent_chunks},
    )


def keep_sent(state: EvidenceState, sent: Sent) -> None:
    """Store what has been sent (`sent_of` grown by a search) back in the carried state."""
    state.sent_text = [SentText(database=d, document_id=i, ranges=r) for (d, i), r in sent.ranges.items()]
    known = {(r.database, r.chunk_id) for r in state.sent_chunks}
    state.sent_chunks += [EvidenceRef(database=d, chunk_id=c) for d, c in sorted(sent.chunks - known)]


def _cited_outside(state: EvidenceState, names: Sequence[str]) -> dict[str, str]:
    """Chunks earlier answers cited from databases this question does not cover: chunk id -> database."""
    return {
        e.citation.chunk_id: e.citation.database for e in state.earlier if e.citation.database not in names
    }


def cite_report(
    citations: Sequence[Citation],
    resolution: Resolution[ResolvedChunk],
    *,
    outside: Mapping[str, str] | None = None,
) -> str:
    """What `cite` tells the model: the numbers to use, and any ids it could not attribute.

    `outside` names the database of chunks cited earlier in the conversation from databases this
    question does not cover, so refusing one of them says why.
    """
    outside = outside or {}
    lines = [
        f"Cited [{c.index}]: {c.document_title or 'untitled'} (database {c.database}). "
        f"Mark the statements it supports with [{c.index}]."
        for c in citations
    ]
    lines += [
        f"Not cited: {i!r} is a chunk of the database {outside[i]}, which this question does not cover; "
        "cite only chunks from this question's databases (search them for the point it made)."
        if i in outside
        else f"Not cited: {i!r} is not a chunk id in the searched databases; "
        "use ids exactly as shown in square brackets in search results. A chunk found earlier in the "
        "conversation may have changed since (its document re-added, or the database rebuilt with "
        "another chunk size): search again for what it said."
        for i in resolution.missing
    ]
    lines += [
        f"Not cited: {i!r} is held by more than one database ({', '.join(names)}), so it cannot be "
        "attributed to one; cite a different chunk that supports the same point."
        for i, names in resolution.ambiguous.items()
    ]
    return "\n".join(lines)
