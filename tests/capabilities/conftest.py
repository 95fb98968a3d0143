"""Real databases for capability and agent tests: `notes` and `papers`, configured by name."""

from __future__ import annotations

import pytest

from haiku_cli.databases.workspace import Workspace

NOTES = [
    {"text": "The capital of France is Paris. It lies on the river Seine.", "title": "France"},
    {"text": "Basil grows best in warm weather with at least six hours of sun.", "title": "Gardening"},
]
PAPERS = [
    {"text": "Photosynthesis converts light energy into chemical energy in chloroplasts.", "title": "Plants"},
    {"text": "The mitochondrion is the powerhouse of the cell, producing ATP.", "title": "Cells"},
]


@pytest.fixture
def kb(make_db, write_config, workspace) -> Workspace:
    """A workspace whose config lists two real databases, `notes` and `papers`."""
    notes, _ = make_db("notes", NOTES)
    papers, _ = make_db("papers", PAPERS)
    write_config(f'[databases]\nnotes = "{notes.uri}"\npapers = "{papers.uri}"\n')
    return workspace()
