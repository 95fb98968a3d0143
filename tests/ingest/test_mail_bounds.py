"""A hostile mail costs bounded work: its structure is read with the bounds applied while reading (mails
inside mails, parts inside parts, parts in all), and the note says what was left out unread."""

from __future__ import annotations

from pathlib import Path

from haiku_cli.ingest.convert import convert_file
from haiku_cli.ingest.convert.mail_structure import MAX_NESTING, MAX_PARTS


def _mail_inside_mails(depth: int) -> bytes:
    """`depth` mails, each forwarded inside the next (as `message/rfc822`), the outermost last."""
    mail = b"Subject: Level %d\r\n\r\nThe innermost.\r\n" % depth
    for level in range(depth - 1, 0, -1):
        mail = (
            (
                b"Subject: Level %d\r\nMIME-Version: 1.0\r\n"
                b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n'
                b"--b%d\r\nContent-Type: text/plain\r\n\r\nWrapping level %d.\r\n"
                b"--b%d\r\nContent-Type: message/rfc822\r\n"
                b'Content-Disposition: attachment; filename="l%d.eml"\r\n\r\n'
                % (level, level, level, level + 1, level, level + 1)
            )
            + mail
            + b"\r\n--b%d--\r\n" % level
        )
    return mail


def test_a_mail_nested_thousands_deep_is_read_only_to_its_depth_bound(tmp_path: Path) -> None:
    path = tmp_path / "deep.eml"
    path.write_bytes(_mail_inside_mails(3000))  # about 600 KB: the whole structure used to be parsed first
    doc = convert_file(path)
    assert doc.title == "Level 1"
    assert [child.title for child in doc.children] == ["Level 2", "Level 3", "Level 4"]
    assert any("l5.eml: a mail inside more than 3 mails; left out" in note for note in doc.notes)


def test_parts_nested_past_the_bound_are_left_out_with_a_note(tmp_path: Path) -> None:
    body = (
        b"Content-Type: text/markdown\r\nContent-Disposition: attachment; filename=leaf.md\r\n\r\n# Leaf\r\n"
    )
    for level in range(5000):
        body = (
            b"Content-Type: multipart/mixed; boundary=m%d\r\n\r\n--m%d\r\n" % (level, level)
            + body
            + b"\r\n--m%d--\r\n" % level
        )
    path = tmp_path / "nested.eml"
    path.write_bytes(b"Subject: Russian dolls\r\nFrom: ada@example.com\r\n" + body)
    doc = convert_file(path)
    assert doc.title == "Russian dolls" and doc.children == ()  # the leaf lay 5000 parts deep
    assert f"{path}: 1 part(s) nested more than {MAX_NESTING} deep; left out unread" in doc.notes


def test_parts_past_the_count_bound_are_left_out_with_a_note(tmp_path: Path) -> None:
    parts = b"".join(
        b"--b\r\nContent-Type: text/markdown\r\nContent-Disposition: attachment; filename=n%d.md\r\n\r\n"
        b"# Note %d\r\n" % (n, n)
        for n in range(MAX_PARTS + 500)
    )
    path = tmp_path / "many.eml"
    path.write_bytes(
        b"Subject: Many notes\r\nFrom: ada@example.com\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
        + parts
        + b"--b--\r\n"
    )
    doc = convert_file(path)
    assert len(doc.children) == MAX_PARTS  # every part is an attachment here: the first MAX_PARTS read
    assert doc.children[-1].title == f"Note {MAX_PARTS - 1}"
    assert f"{path}: 500 part(s) beyond the first {MAX_PARTS}; left out unread" in doc.notes


def test_a_mailbox_message_past_a_bound_is_named_in_the_note(tmp_path: Path) -> None:
    body = b"Content-Type: text/plain\r\n\r\nleaf\r\n"
    for level in range(MAX_NESTING + 4):
        body = b"Content-Type: multipart/mixed; boundary=m%d\r\n\r\n--m%d\r\n" % (level, level) + body
    path = tmp_path / "inbox.mbox"
    path.write_bytes(
        b"From ada@example.com Mon Jun  1 10:00:00 2026\nSubject: Fine\n\nA fine message.\n\n"
        b"From ada@example.com Mon Jun  1 10:00:00 2026\nSubject: Dolls\n" + body
    )
    doc = convert_file(path)
    assert [child.title for child in doc.children] == ["Fine", "Dolls"]
    assert any(n.startswith(f"{path}#message/2: 1 part(s) nested more than") for n in doc.notes)


def test_a_multipart_without_a_boundary_is_named_in_the_note(tmp_path: Path) -> None:
    path = tmp_path / "unsplit.eml"
    path.write_bytes(
        b"Subject: No boundary\r\nFrom: ada@example.com\r\nContent-Type: multipart/mixed\r\n\r\n"
        b"--x\r\nContent-Type: text/plain\r\n\r\nUnreachable.\r\n--x--\r\n"
    )
    doc = convert_file(path)  # its content was left out without a word
    assert doc.title == "No boundary"
    assert f"{path}: 1 multipart part(s) without a boundary; left out unread" in doc.notes
