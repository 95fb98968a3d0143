"""Mail through the whole add: from/to/date as metadata, attachments and a mailbox's messages as documents
of their own, kept in step with their file by add, sync and delete (real database, real embedder)."""

from __future__ import annotations

import json
from email.message import EmailMessage
from pathlib import Path

import anyio

from haiku_cli.ingest import pipeline
from haiku_cli.ingest.convert.dispatch import file_uri
from haiku_cli.ingest.sync import sync_source
from haiku_cli.store import reads
from haiku_cli.store import source_tables as stored
from haiku_cli.store.blocking import wait
from tests.ingest.helpers import make_pdf
from tests.ingest.support import new_db


def _mail(subject: str, attachments: list[tuple[str, bytes]]) -> bytes:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = "Ada <ada@example.com>"
    message["To"] = "grace@example.com, alan@example.com"
    message["Date"] = "Mon, 01 Jun 2026 10:00:00 +0000"
    message.set_content("The lantern figures are attached.")
    for name, data in attachments:
        message.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return message.as_bytes()


_ATTACHED = [
    ("budget.csv", b"item,cost\nwick,3\noil,12\n"),
    ("report.pdf", make_pdf(["Whale oil lanterns burned brightest."])),
    ("photo.bin", b"\x00\x01\x02"),
    ("broken.docx", b"not a zip at all"),
]


def _add(db, embedder, *sources: str):
    return anyio.run(lambda: pipeline.add_sources(db, embedder, list(sources), title=None, metadata={}))


def _sync(db, embedder, source: str):
    (remembered,) = [s for s in stored.read_sources(db) if s.source == source]

    async def get_embedder():
        return embedder

    return anyio.run(lambda: sync_source(db, get_embedder, remembered))


def _documents(db) -> dict[str, dict]:
    return {d.uri: d.metadata for d in wait(reads.list_documents(db, limit=None))}


def test_a_mail_and_its_readable_attachments_are_documents_kept_in_step(tmp_path: Path, embedder) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    path = folder / "lanterns.eml"
    path.write_bytes(_mail("Lantern budget", _ATTACHED))
    db = new_db(tmp_path, embedder)
    mail = file_uri(path)
    csv, pdf = f"{mail}#attachment/budget.csv", f"{mail}#attachment/report.pdf"

    report = _add(db, embedder, str(folder))
    assert [(o.source, o.status) for o in report.outcomes] == [
        (str(path), "added"),
        (f"{path}#attachment/budget.csv", "added"),
        (f"{path}#attachment/report.pdf", "added"),
    ]
    note = report.outcomes[0].note or ""
    assert (
        f"{path}#attachment/broken.docx: " in note
        and "left out, not in a format haiku reads: photo.bin" in note
    )
    stored_docs = _documents(db)
    assert set(stored_docs) == {mail, csv, pdf}
    assert stored_docs[mail] == {
        "from": "Ada <ada@example.com>",
        "to": "grace@example.com, alan@example.com",
        "date": "2026-06-01T10:00:00+00:00",
    }
    assert stored_docs[pdf] == {"attached_to": mail, "part_of": mail}
    filtered = wait(reads.list_documents(db, where=f"metadata.attached_to = '{mail}'"))
    assert {d.uri for d in filtered} == {csv, pdf}
    by_sender = wait(reads.list_documents(db, where="metadata.from = 'Ada <ada@example.com>'"))
    assert [d.title for d in by_sender] == ["Lantern budget"]

    again = _add(db, embedder, str(folder))
    assert [o.status for o in again.outcomes] == ["unchanged"] * 3

    # The mail changes: the PDF is no longer attached, the spreadsheet is new.
    path.write_bytes(_mail("Lantern budget", [("budget.csv", b"item,cost\nwick,4\n")]))
    changed = _sync(db, embedder, str(folder))
    assert sorted((c.source, c.status) for c in changed.changes) == [
        (str(path), "updated"),
        (f"{path}#attachment/budget.csv", "updated"),
        (f"{path}#attachment/report.pdf", "deleted"),
    ]
    assert set(_documents(db)) == {mail, csv}

    path.unlink()
    gone = _sync(db, embedder, str(folder))
    assert sorted((c.source, c.status) for c in gone.changes) == [
        (str(path), "deleted"),
        (f"{path}#attachment/budget.csv", "deleted"),
    ]
    assert _documents(db) == {}


def test_each_message_of_a_mailbox_is_a_document_with_its_attachments(tmp_path: Path, embedder) -> None:
    path = tmp_path / "inbox.mbox"
    first = _mail("Wicks", [("wicks.md", b"# Wicks\n\nCotton wicks burn evenly.")])
    second = _mail("Oil", [])
    path.write_bytes(
        b"From ada@example.com Mon Jun  1 10:00:00 2026\n"
        + first
        + b"\nFrom x Mon Jun  1 11:00:00 2026\n"
        + second
    )
    db = new_db(tmp_path, embedder)
    report = _add(db, embedder, str(path))
    box = file_uri(path)
    assert [(o.source, o.status) for o in report.outcomes] == [
        (str(path), "added"),
        (f"{path}#message/1", "added"),
        (f"{path}#message/1/attachment/wicks.md", "added"),
        (f"{path}#message/2", "added"),
    ]
    docs = {d.uri: d for d in wait(reads.list_documents(db, limit=None))}
    assert docs[f"{box}#message/1"].title == "Wicks"
    assert docs[f"{box}#message/2"].metadata["part_of"] == box
    assert docs[f"{box}#message/1/attachment/wicks.md"].metadata == {
        "attached_to": f"{box}#message/1",
        "part_of": box,
    }
    assert [o.status for o in _add(db, embedder, str(path)).outcomes] == ["unchanged"] * 4


def test_deleting_or_forgetting_a_mail_deletes_its_attachments(cli, tmp_path: Path) -> None:
    path = tmp_path / "note.eml"
    path.write_bytes(_mail("Minutes", [("minutes.md", b"# Minutes\n\nWe agreed on oil.")]))
    added = json.loads(cli("add-src", str(path), "--json").stdout)
    mail_id = added["outcomes"][0]["document_id"]
    gone = json.loads(cli("delete", mail_id, "--json").stdout)
    assert gone["parts"] == 1
    assert json.loads(cli("list", "--json").stdout)["documents"] == []
    cli("add-src", str(path))
    forgotten = json.loads(cli("forget-src", str(path), "--json").stdout)
    assert (forgotten["deleted_documents"], forgotten["kept_documents"]) == (2, 0)
    assert json.loads(cli("list", "--json").stdout)["documents"] == []


def test_an_attachment_is_as_fresh_as_its_mail_file(cli, tmp_path: Path) -> None:
    path = tmp_path / "note.eml"
    path.write_bytes(_mail("Minutes", [("minutes.md", b"# Minutes\n\nWe agreed on whale oil.")]))
    cli("add-src", str(path))

    def attachment_hit() -> dict:
        hits = json.loads(cli("search", "agreed on whale oil", "--json").stdout)["hits"]
        return next(h for h in hits if h["document_uri"].endswith("#attachment/minutes.md"))

    assert attachment_hit()["source_state"] == "fresh"
    # Only the mail's own text changed: the attachment would be stored as it is.
    path.write_bytes(_mail("Minutes, revised", [("minutes.md", b"# Minutes\n\nWe agreed on whale oil.")]))
    assert attachment_hit()["source_state"] == "fresh"
    path.write_bytes(_mail("Minutes", [("minutes.md", b"# Minutes\n\nWe agreed on candles.")]))
    changed = attachment_hit()
    assert changed["source_state"] == "changed"
    shown = cli("search", "agreed on whale oil").stdout
    assert "haiku sync" in shown
    path.unlink()
    assert attachment_hit()["source_state"] == "missing"


def _boxed(*messages: bytes) -> bytes:
    return b"\n".join(b"From ada@example.com Mon Jun  1 10:00:00 2026\n" + m for m in messages)


def _with_id(subject: str, message_id: str | None) -> bytes:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = "ada@example.com"
    if message_id:
        message["Message-ID"] = message_id
    message.set_content(f"About {subject.lower()}.")
    return message.as_bytes()


def test_a_mailbox_message_keeps_its_uri_when_another_is_taken_out(tmp_path: Path, embedder) -> None:
    path = tmp_path / "inbox.mbox"
    wicks, oil, glass = (_with_id(s, f"<{s.lower()}@example.com>") for s in ("Wicks", "Oil", "Glass"))
    path.write_bytes(_boxed(wicks, oil, glass, oil, _with_id("No id", None)))
    db = new_db(tmp_path, embedder)
    first = _add(db, embedder, str(path))
    messages = [o.source.removeprefix(f"{path}#message/") for o in first.outcomes[1:]]
    # Keyed by a short hash of the Message-ID; a repeated id, or none, by its place in the mailbox.
    assert [len(m) for m in messages[:3]] == [12, 12, 12] and messages[3:] == ["4", "5"]
    assert all(m.isalnum() for m in messages)

    path.write_bytes(_boxed(oil, glass, oil, _with_id("No id", None)))
    again = _add(db, embedder, str(path))
    statuses = {o.source.removeprefix(f"{path}#message/"): o.status for o in again.outcomes}
    assert {k: statuses[k] for k in messages[:3]} == {
        messages[0]: "deleted",
        **dict.fromkeys(messages[1:3], "unchanged"),
    }


def test_a_mail_attached_to_a_mail_is_a_mail_of_its_own_bounded_in_depth(tmp_path: Path, embedder) -> None:
    inner = EmailMessage()
    inner["Subject"] = "Original lantern order"
    inner["From"] = "grace@example.com"
    inner["Date"] = "Sun, 31 May 2026 09:00:00 +0000"
    inner.set_content("Ten brass lanterns, please.")
    inner.add_attachment(
        b"# Order\n\nTen brass lanterns.", maintype="text", subtype="markdown", filename="order.md"
    )
    outer = EmailMessage()
    outer["Subject"] = "Fwd: lantern order"
    outer["From"] = "ada@example.com"
    outer.set_content("See below.")
    outer.add_attachment(inner, filename="order.eml")
    path = tmp_path / "fwd.eml"
    path.write_bytes(outer.as_bytes())
    db = new_db(tmp_path, embedder)
    report = _add(db, embedder, str(path))
    mail = file_uri(path)
    attached = f"{mail}#attachment/order.eml"
    assert [o.source for o in report.outcomes] == [
        str(path),
        f"{path}#attachment/order.eml",
        f"{path}#attachment/order.eml/attachment/order.md",
    ]
    docs = {d.uri: d for d in wait(reads.list_documents(db, limit=None))}
    assert docs[attached].title == "Original lantern order"
    assert docs[attached].metadata == {
        "from": "grace@example.com",
        "date": "2026-05-31T09:00:00+00:00",
        "attached_to": mail,
        "part_of": mail,
    }
    assert docs[f"{attached}/attachment/order.md"].metadata == {"attached_to": attached, "part_of": mail}

    # Five mails, each inside the next: the three inside the outermost are read, the fourth is cut.
    nested = EmailMessage()
    nested["Subject"] = "Level 5"
    nested.set_content("The innermost.")
    for level in (4, 3, 2, 1):
        wrapper = EmailMessage()
        wrapper["Subject"] = f"Level {level}"
        wrapper.set_content(f"Wrapping level {level + 1}.")
        wrapper.add_attachment(nested, filename=f"level{level + 1}.eml")
        nested = wrapper
    deep = tmp_path / "deep.eml"
    deep.write_bytes(nested.as_bytes())
    outcomes = _add(db, embedder, str(deep)).outcomes
    titles = [
        d.title
        for d in wait(reads.list_documents(db, limit=None))
        if (d.uri or "").startswith(file_uri(deep))
    ]
    assert sorted(titles) == ["Level 1", "Level 2", "Level 3", "Level 4"]
    assert "inside more than 3 mails; left out" in (outcomes[0].note or "")
    assert "level5.eml" in (outcomes[0].note or "")


class _Counting:
    """The real embedder, counting the texts it is given to embed."""

    def __init__(self, embedder) -> None:
        self._embedder, self.embedded = embedder, 0

    def __getattr__(self, name: str):
        return getattr(self._embedder, name)

    async def embed_documents(self, texts, on_progress=None):
        self.embedded += len(texts)
        return await self._embedder.embed_documents(texts, on_progress)


def test_an_unchanged_mailbox_added_again_embeds_nothing(tmp_path: Path, embedder) -> None:
    path = tmp_path / "inbox.mbox"
    mails = [_mail(f"Note {i}", [(f"n{i}.md", f"# N{i}\n\nWick {i}.".encode())]) for i in range(3)]
    path.write_bytes(_boxed(*mails))
    db = new_db(tmp_path, embedder)
    counting = _Counting(embedder)
    _add(db, counting, str(path))
    assert counting.embedded >= 7  # the mailbox, 3 messages, 3 attachments
    counting.embedded = 0
    assert {o.status for o in _add(db, counting, str(path)).outcomes} == {"unchanged"}
    assert counting.embedded == 0
