"""The text stored for a document gives back its pages."""

from __future__ import annotations

from haiku_cli.ingest import stored
from haiku_cli.ingest.document import ConvertedDocument, Segment


def test_pdf_pages_survive_a_rebuild() -> None:
    doc = ConvertedDocument(uri="file:///x.pdf", title="X", segments=[Segment("Only page text.", page=1)])
    assert stored.from_stored(doc.uri, doc.title, stored.stored_content(doc)).segments == doc.segments
    two = ConvertedDocument(uri="u", title="t", segments=[Segment("one", page=1), Segment("two", page=2)])
    assert stored.from_stored("u", "t", stored.stored_content(two)).segments == two.segments
