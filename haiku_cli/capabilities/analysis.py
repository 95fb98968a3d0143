"""The analysis capability: the model runs Python over the selected databases' documents in a sandbox.

It extends the retrieval capability, so `search` and `cite` are the very same tools with the same state
rules, and adds `execute_code`. One sandbox serves one run (one question): it opens on the first
execution, keeps the program's variables between executions and closes when the run ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import anyio
from pydantic import Field
from pydantic_ai import RunContext
from pydantic_ai.capabilities import WrapRunHandler
from pydantic_ai.run import AgentRunResult
from pydantic_ai.toolsets import FunctionToolset

from haiku_cli.capabilities.evidence import record_return
from haiku_cli.capabilities.retrieval import RetrievalCapability
from haiku_cli.capabilities.state import EvidenceRef, EvidenceReturn, EvidenceState, HaikuDeps, state_of
from haiku_cli.sandbox.corpus import open_corpus_sandbox
from haiku_cli.sandbox.runner import Execution, Sandbox
from haiku_cli.search.hits import SearchHit


class ExecutionRecord(EvidenceReturn):
    """One program the model ran: which answer and run step it belonged to, and what came of it."""

    TOOL: ClassVar[str] = "execute_code"

    code: str
    stdout: str
    stderr: str
    ok: bool
    output_chars: int | None = None  # the output's length, kept once the output itself is dropped

    def slimmed(self) -> ExecutionRecord:
        """What an earlier question's program leaves in the state: enough for its receipt, not its text."""
        return self.model_copy(
            update={"code": "", "stdout": "", "stderr": "", "output_chars": self.output_length}
        )

    @property
    def output_length(self) -> int:
        """How many characters the program printed."""
        return self.output_chars if self.output_chars is not None else len(self.stdout)

    def execution(self) -> Execution:
        """The record as the `{code, stdout, stderr, ok}` shape users see."""
        return Execution(code=self.code, stdout=self.stdout, stderr=self.stderr, ok=self.ok)

    def receipt(self, question: str) -> str:
        """A one-line stand-in for a program's output made for an earlier question."""
        outcome = "ran" if self.ok else "failed"
        return (
            f"[A program for the earlier question {question!r} {outcome}; its output ({self.output_length} "
            "characters) was compacted. Run it again if you need it.]"
        )


class AnalysisState(EvidenceState):
    """The retrieval evidence fields plus the programs run: whole for the current answer, slimmed before.

    When a question begins, earlier programs keep only what compaction needs for their receipts (which
    call, which answer, whether it ran and how much it printed): the carried state stays small however
    long the conversation. The message history keeps every program and its output.
    """

    executions: list[ExecutionRecord] = Field(default_factory=list)

    def begin_question(self, run_id: str | None, text: str = "", *, abandon: bool = False) -> None:
        """Start a new question; the programs of earlier ones are slimmed to their receipts."""
        super().begin_question(run_id, text, abandon=abandon)
        self.executions = [e.slimmed() if e.answer < self.answer else e for e in self.executions]

    def current_executions(self) -> list[ExecutionRecord]:
        """The programs run for the current answer."""
        return [e for e in self.executions if e.answer == self.answer]

    def evidence_returns(self) -> list[EvidenceReturn]:
        """Searches and program runs: both showed the model evidence."""
        return [*self.searches, *self.executions]

    @property
    def evidence_mark(self) -> int:
        """A program that ran over the documents is evidence too, even if no chunk was shown."""
        return super().evidence_mark + len(self.current_executions())


@dataclass(eq=False)
class AnalysisCapability(RetrievalCapability):
    """`execute_code`, `search` and `cite` over the question's sources; the sandbox lives for one run."""

    state_key: str = "analysis"
    _stack: contextlib.AsyncExitStack | None = field(default=None, init=False, repr=False)
    _unwrapped: contextlib.AsyncExitStack | None = field(default=None, init=False, repr=False)
    _sandbox: Sandbox | None = field(default=None, init=False, repr=False)
    _opening: anyio.Lock = field(default_factory=anyio.Lock, init=False, repr=False)

    def evidence(self, deps: HaikuDeps) -> AnalysisState:
        """The live analysis state (the evidence fields plus executions)."""
        return state_of(deps, self.state_key, AnalysisState)

    def evidence_tools(self) -> frozenset[str]:
        """`execute_code`, and `search` (served when no retrieval capability before it is active)."""
        return super().evidence_tools() | {"execute_code"}

    def get_description(self) -> str:
        """What the model reads in the load catalog when this capability is deferred."""
        return self.description or (
            "Compute over the user's documents with sandboxed Python programs: counting, comparing, "
            "aggregating and tabulating across many documents; search and cite them too."
        )

    def get_toolset(self) -> FunctionToolset[HaikuDeps]:
        """`search` and `cite` from retrieval (unless another capability serves them), plus `execute_code`."""
        toolset = super().get_toolset()
        toolset.add_function(self.execute_code, name="execute_code")
        return toolset

    def get_instructions(self) -> Callable[[RunContext[HaikuDeps]], str]:
        """How to use the sandbox, naming the databases this question covers and the limits."""

        def instructions(ctx: RunContext[HaikuDeps]) -> str:
            names = self.selection(ctx.deps).names
            limits = self.workspace.settings.sandbox
            return analysis_instructions(
                names,
                timeout=limits.timeout_seconds,
                memory_mb=limits.memory_mb,
                max_output=limits.max_output_chars,
                max_executions=limits.max_executions,
                budget=self.budget,
            )

        return instructions

    async def for_run(self, ctx: RunContext[HaikuDeps]) -> AnalysisCapability:
        """A fresh instance per run, so each question gets its own sandbox."""
        return replace(self)

    async def wrap_run(self, ctx: RunContext[HaikuDeps], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        """Close the run's sandbox (if one was opened) when the run ends, however it ends."""
        async with contextlib.AsyncExitStack() as stack:
            self._stack = stack
            try:
                return await handler()
            finally:
                self._stack = None
                self._sandbox = None

    async def after_run(
        self, ctx: RunContext[HaikuDeps], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        """Finish the question, and close a sandbox opened without `wrap_run` (see `_sandbox_for`)."""
        result = await super().after_run(ctx, result=result)
        await self._close_unwrapped()
        return result

    async def on_run_error(self, ctx: RunContext[HaikuDeps], *, error: BaseException) -> AgentRunResult[Any]:
        """Close a sandbox opened without `wrap_run`, and let the error through."""
        await self._close_unwrapped()
        raise error

    async def _close_unwrapped(self) -> None:
        stack, self._unwrapped = self._unwrapped, None
        if stack is not None:
            self._sandbox = None
            await stack.aclose()

    async def execute_code(self, ctx: RunContext[HaikuDeps], code: str) -> str:
        """Run a Python program in the sandbox over the documents; returns what it printed and any error.

        Variables persist between executions of this question. The value of a final bare expression is
        shown, as in a notebook.

        Args:
            code: The program. Read /documents/{id}/..., call list_documents() and search(query, limit).
        """
        sandbox = await self._sandbox_for(ctx)
        result = await sandbox.execute(code)
        state = self.evidence(ctx.deps)
        state.executions.append(ExecutionRecord(**record_return(ctx, state), **result.model_dump()))
        return result.for_model()

    async def _sandbox_for(self, ctx: RunContext[HaikuDeps]) -> Sandbox:
        async with self._opening:  # two executions in one response must not open two sandboxes
            if self._sandbox is None:
                stack = self._stack
                if stack is None:
                    # Loaded mid-run (deferred): `wrap_run` never wrapped this run, so the sandbox gets its
                    # own stack, closed by `after_run` or `on_run_error`, which do fire once it is loaded.
                    stack = self._unwrapped = contextlib.AsyncExitStack()
                state = self.evidence(ctx.deps)

                def saw(hits: list[SearchHit]) -> None:
                    # Chunks a program found by searching are evidence in play, as the search tool's are.
                    state.saw([EvidenceRef(database=h.database, chunk_id=h.chunk_id) for h in hits])

                opened = open_corpus_sandbox(
                    self.workspace,
                    self.selection(ctx.deps),
                    document_filter=self.question_filter(ctx.deps),
                    on_hits=saw,
                )
                self._sandbox = await stack.enter_async_context(opened)
            return self._sandbox


def analysis_instructions(
    databases: list[str],
    *,
    timeout: float,
    memory_mb: int,
    max_output: int,
    max_executions: int,
    budget: int,
) -> str:
    """What the model needs to know to compute over the documents, and to cite what it found."""
    several = len(databases) > 1
    return (
        "Answer by computing over the user's documents with `execute_code`, which runs a Python program "
        f"in a sandbox. This question covers the database{'s' if several else ''} {', '.join(databases)}. "
        "In the sandbox, each document is a read-only directory /documents/{document_id}/ holding "
        "metadata.json (id, database, title, uri, metadata, created_at, updated_at), content.txt (the full "
        "text), chunks.jsonl (one JSON object per line: id, document_id, database, order, text, "
        "heading_path, pages) and pictures.json (the document's figures: reference, page, box, width, "
        "height, format, caption, size, path), whose files are in pictures/ (read_bytes()). "
        "Two functions are built in: list_documents() returns "
        "[{id, database, title, uri, metadata, created_at, path}] and search(query, limit=10) returns "
        "ranked chunks [{database, document_id, document_title, document_uri, chunk_id, content, score, "
        "rank, heading_path, pages, metadata, pictures, path}] (the fields of `haiku search --json`). "
        "The sandbox has no network and no host files; it imports only a safe subset of the standard "
        "library (json, re, collections, math, datetime, itertools, functools, csv and the like; not "
        "statistics, heapq or textwrap, so compute means and medians by hand). Variables persist between "
        "executions of this question. Print only what you need: counts, tables, short excerpts. "
        f"Limits per execution: {timeout:g} s, {memory_mb} MB, {max_output} characters of output; at most "
        f"{max_executions} executions per question. The `search` tool is also available outside the "
        f"sandbox ({budget} search units). Cite the chunks that support the answer with `cite`, by chunk "
        "id (the `id` in chunks.jsonl, or `chunk_id` in search results)."
    )
