"""The citation policy: an answer built on evidence must cite it or say it is ungrounded.

One decision per answer, across every registered evidence capability. When a final response would end
the question with evidence in play and nothing cited or declared, the model is sent back once; a second
such response is accepted but recorded as a violation in state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, RetryFeedbackPart
from pydantic_ai.output import OutputContext

from haiku_cli.capabilities.evidence import evidence_states
from haiku_cli.capabilities.state import EvidenceState, HaikuDeps

# A machine tag, so recognising our own redirect never depends on its (editable) prose.
REDIRECT_TAG = "<haiku:cite-or-declare/>"
REDIRECT_MESSAGE = (
    f"{REDIRECT_TAG} You gathered evidence but neither cited it nor declared the answer ungrounded. "
    "Call `cite` with the ids of the chunks your answer relies on, or `cite` with an empty list if the "
    "documents do not support an answer; then give your answer again."
)

Outcome = Literal["grounded", "ungrounded", "no_evidence", "violation"]
Decision = Outcome | Literal["redirect"]


class PolicyState(BaseModel):
    """The policy's record: whether this answer was sent back, its outcome, and earlier answers' outcomes."""

    redirected: bool = False
    outcome: Outcome | None = None
    history: list[Outcome] = Field(default_factory=list)

    def begin_answer(self) -> None:
        """File the previous answer's outcome and start a new answer."""
        if self.outcome is not None:
            self.history.append(self.outcome)
        self.outcome = None
        self.redirected = False


def decide(states: Sequence[EvidenceState], *, redirected: bool) -> Decision:
    """The one decision on a final response, given every evidence state and whether we already redirected."""
    if any(s.grounded for s in states):
        return "grounded"
    if any(s.settled for s in states):
        return "ungrounded"
    if not any(s.has_evidence for s in states):
        return "no_evidence"
    return "violation" if redirected else "redirect"


def redirect_sent(messages: Sequence[ModelMessage], run_id: str | None) -> bool:
    """Whether this run's history holds our redirect, recognised by its machine tag."""
    for message in messages:
        if not isinstance(message, ModelRequest) or (run_id is not None and message.run_id != run_id):
            continue
        for part in message.parts:
            if (
                isinstance(part, RetryFeedbackPart)
                and isinstance(part.content, str)
                and REDIRECT_TAG in part.content
            ):
                return True
    return False


@dataclass(eq=False)
class CitationPolicy(AbstractCapability[HaikuDeps]):
    """Hold every answer built on evidence to citing it or declaring it ungrounded (one per agent)."""

    _: KW_ONLY
    # A default id makes a second instance merge into the first: an agent has one policy.
    id: str | None = "citation_policy"
    state_key: str = "citation_policy"

    def state(self, deps: HaikuDeps) -> PolicyState:
        """The live policy state in `deps.state`."""
        return deps.get(self.state_key, PolicyState)

    def get_instructions(self) -> str:
        """The grounding rule, as the model should hear it."""
        return (
            "Ground every answer in the documents. Before answering, call `cite` with the ids of the chunks "
            "that support it, and mark each supported statement with the number `cite` returns, like [1]. "
            "If the documents do not answer the question, say plainly that the documents do not say, and "
            "call `cite` with an empty list to declare the answer ungrounded."
        )

    async def before_run(self, ctx: RunContext[HaikuDeps]) -> None:
        """A run is one answer: file the last outcome."""
        self.state(ctx.deps).begin_answer()

    async def after_output_process(
        self, ctx: RunContext[HaikuDeps], *, output_context: OutputContext, output: Any
    ) -> Any:
        """Judge a final response: accept it, send it back once, or accept it as a recorded violation."""
        if ctx.partial_output:
            return output
        policy = self.state(ctx.deps)
        states = evidence_states(ctx)
        decision = decide(states, redirected=redirect_sent(ctx.messages, ctx.run_id))
        if decision == "redirect":
            if ctx.retry < ctx.max_retries:
                policy.redirected = True
                raise ModelRetry(REDIRECT_MESSAGE)
            decision = "violation"  # no output retry left to redirect with
        if decision == "violation":
            # Let the answer through, but never silently: each state that held evidence records it.
            for s in states:
                s.violation = s.has_evidence
        policy.outcome = decision
        return output
