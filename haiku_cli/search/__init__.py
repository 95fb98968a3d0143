"""Searching one database for candidates, and fusing candidates into one ranking."""

from haiku_cli.search.candidates import Candidate, SearchType, find_candidates
from haiku_cli.search.fusion import fuse
from haiku_cli.search.hits import SearchHit

__all__ = ["Candidate", "SearchHit", "SearchType", "find_candidates", "fuse"]
