"""pydantic-ai capabilities a host composes into its agent: retrieval (search, cite) and the citation policy.

State lives in `HaikuDeps.state`, one JSON-compatible model per capability key.
"""

from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.evidence import EvidenceCapability, evidence_states, record_citations
from haiku_cli.capabilities.policy import REDIRECT_TAG, CitationPolicy, PolicyState
from haiku_cli.capabilities.retrieval import RetrievalCapability
from haiku_cli.capabilities.scope import selection_of, sources_of
from haiku_cli.capabilities.state import EvidenceRef, EvidenceState, HaikuDeps, SearchRecord, Source

__all__ = [
    "REDIRECT_TAG",
    "Citation",
    "CitationPolicy",
    "EvidenceCapability",
    "EvidenceRef",
    "EvidenceState",
    "HaikuDeps",
    "PolicyState",
    "RetrievalCapability",
    "SearchRecord",
    "Source",
    "evidence_states",
    "record_citations",
    "selection_of",
    "sources_of",
]
