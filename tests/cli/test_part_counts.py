"""`haiku sources` and `haiku doctor` count the documents read out of a file (a mailbox's messages, a
mail's attachments) as documents of its source, fresh or stale, and `search --sync` syncs a mailbox whose
listing is as it was but one of whose messages changed."""

from __future__ import annotations

import json
import re
from email.message import EmailMessage
from pathlib import Path


def _message(subject: str, body: str, attachment: bytes | None = None) -> bytes:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = "ada@example.com"
    message["Message-ID"] = f"<{subject.lower()}@example.com>"
    message.set_content(body)
    if attachment is not None:
        message.add_attachment(attachment, maintype="text", subtype="markdown", filename="order.md")
    return message.as_bytes()


def _mailbox(oil_body: str) -> bytes:
    messages = [
        _message("Wicks", "Cotton wicks for the lanterns."),
        _message("Oil", oil_body),
        _message("Glass", "Glass chimneys.", b"# Order\n\nTen chimneys."),
    ]
    return b"\n".join(b"From ada@example.com Mon Jun  1 10:00:00 2026\n" + m for m in messages)


def _counts(cli) -> tuple[int, int, int]:
    (listed,) = json.loads(cli("sources", "--json").stdout)["sources"]
    return listed["documents"], listed["changed"], listed["missing"]


def _stale_detail(cli) -> str:
    checks = json.loads(cli("doctor", "--json").stdout)
    (stale,) = [c for db in checks["databases"] for c in db["checks"] if c["check"] == "stale_sources"]
    return stale["detail"]


def _text_row(cli, name: str) -> list[str]:
    """The `haiku sources` text row of the source ending in `name`: its cells as printed."""
    row = next(line for line in cli("sources").stdout.splitlines() if name in line)
    return re.split(r"\s{2,}|\s*│\s*", row.strip(" │"))


def test_sources_and_doctor_count_a_mailboxs_messages_and_attachments(cli, tmp_path: Path) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    box = folder / "inbox.mbox"
    box.write_bytes(_mailbox("Whale oil, two barrels."))
    (folder / "note.txt").write_text("Lantern notes.\n", encoding="utf-8")
    assert cli("add-src", str(folder)).exit_code == 0
    # The note, the mailbox, its 3 messages and the attachment of one.
    assert _counts(cli) == (6, 0, 0)
    assert _text_row(cli, "mail")[2:5] == ["6", "0", "0"]

    # One message's body changed: the mailbox's listing (subjects, senders) is as it was.
    box.write_bytes(_mailbox("Whale oil, three barrels."))
    assert _counts(cli) == (6, 1, 0)
    assert _text_row(cli, "mail")[2:5] == ["6", "1", "0"]
    assert _stale_detail(cli).startswith("1 document(s) whose source changed, 0 whose source is gone")
    synced = cli("search", "whale oil", "--sync")
    assert synced.exit_code == 0 and "1 updated" in synced.stderr, synced.stderr
    assert _counts(cli) == (6, 0, 0)

    box.unlink()  # the mailbox and the 4 documents read out of it are gone
    assert _counts(cli) == (6, 0, 5)
    assert _stale_detail(cli).startswith("0 document(s) whose source changed, 5 whose source is gone")
