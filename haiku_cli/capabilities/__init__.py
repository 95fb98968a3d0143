"""pydantic-ai capabilities a host composes into its agent: retrieval, analysis and the citation policy.

State lives in `HaikuDeps.state`, one JSON-compatible model per capability key; a conversation carries it
with its messages. How a host composes these (both evidence capabilities on one agent, carried state,
question identity, what a streaming host sees) is in docs/capabilities.md.

Importing the package loads none of them: each name is imported from its module on first use, so a module
of plain data (citations, state) is imported without loading pydantic-ai.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from haiku_cli.lazy_exports import exports_of, first_use_lookup

if TYPE_CHECKING:
    from haiku_cli.capabilities.analysis import AnalysisCapability, AnalysisState, ExecutionRecord
    from haiku_cli.capabilities.citations import Citation
    from haiku_cli.capabilities.compaction import EvidenceCompaction
    from haiku_cli.capabilities.evidence import (
        CarriedStateError,
        EvidenceCapability,
        evidence_states,
        record_citations,
        set_scope,
    )
    from haiku_cli.capabilities.policy import REDIRECT_TAG, CitationPolicy, PolicyState, cite_available
    from haiku_cli.capabilities.retrieval import RetrievalCapability
    from haiku_cli.capabilities.scope import (
        ScopeError,
        host_selection,
        question_filter,
        question_selection,
        sources_of,
    )
    from haiku_cli.capabilities.state import (
        EarlierCitation,
        EvidenceRef,
        EvidenceReturn,
        EvidenceState,
        HaikuDeps,
        Question,
        SearchRecord,
        Source,
        state_of,
    )


_EXPORTS = exports_of(__file__)
__all__ = [
    "REDIRECT_TAG",
    "AnalysisCapability",
    "AnalysisState",
    "CarriedStateError",
    "Citation",
    "CitationPolicy",
    "EarlierCitation",
    "EvidenceCapability",
    "EvidenceCompaction",
    "EvidenceRef",
    "EvidenceReturn",
    "EvidenceState",
    "ExecutionRecord",
    "HaikuDeps",
    "PolicyState",
    "Question",
    "RetrievalCapability",
    "ScopeError",
    "SearchRecord",
    "Source",
    "cite_available",
    "evidence_states",
    "host_selection",
    "question_filter",
    "question_selection",
    "record_citations",
    "set_scope",
    "sources_of",
    "state_of",
]


__getattr__ = first_use_lookup(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return __all__
