"""`haiku chat` in a real pseudo-terminal against the scripted OpenAI-compatible server (streaming)."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pexpect
import pytest
from rich.console import Console

from haiku_cli.capabilities.citations import Citation
from haiku_cli.chat.sessions import SessionStore
from haiku_cli.cli import output, render
from tests.capabilities.conftest import kb, kb_template
from tests.cli.chat_script import conversation
from tests.cli.test_ask_command import openai_env

__all__ = ["kb", "kb_template", "openai_env"]

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "\x1b[?2004h"  # the line editor switches bracketed paste on each time it starts a prompt
# The banner ends with this; it holds the session file's path before it, as long as the test's tmp folder
# (longer under pytest-xdist or --basetemp), so the terminal may wrap it at any of its spaces.
_GAP = r"(?:\s|\x1b\[[0-9;]*m)+"
BANNER_END = _GAP.join(("/help", "for", "commands"))


def spawn(*args: str) -> pexpect.spawn:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm",
        "NO_COLOR": "1",
        "PROMPT_TOOLKIT_NO_CPR": "1",  # the pty answers no cursor-position requests
    }
    child = pexpect.spawn(
        sys.executable,
        ["-m", "haiku_cli", "chat", "--model", "openai-chat:test", *args],
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )
    child.expect(BANNER_END)
    return child


def ask(child: pexpect.spawn, question: str) -> None:
    child.expect_exact(PROMPT)
    child.send(question + "\r")


@pytest.mark.slow
def test_chat_in_a_terminal(kb, openai_env) -> None:
    stub = openai_env(conversation)
    child = spawn("--session", "tty")
    try:
        assert f"saved after each answer in {SessionStore().path('tty')}" in child.before
        ask(child, "What is the capital of France?")
        child.expect("Paris")
        child.expect(r"\[1\].*France.*\[notes\]")
        ask(child, "How much sun does basil need?")
        child.expect("six hours")
        child.expect(r"\[1\].*Gardening.*\[notes\]")
        # A slow answer: its first words show while the server is still sending, then Ctrl-C.
        ask(child, "Tell me a slow story")
        child.expect("Once upon a time")
        child.sendintr()
        child.expect_exact("(cancelled)")
        ask(child, "/citations")
        child.expect(r"Q1: .*What is the capital of France\?")
        child.expect(r"Q2: .*How much sun does basil need\?")
        child.expect_exact(PROMPT)
        assert "Q3" not in child.before
        child.send("exit\r")  # without the slash: still the command, not a question
        child.expect_exact(f"session tty is saved in {SessionStore().path('tty')}")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert all(body.get("stream") is True for body in stub.requests)
    assert [t.question for t in SessionStore().load("tty").turns] == [
        "What is the capital of France?",
        "How much sun does basil need?",
    ]

    resumed = spawn("--session", "tty")
    try:
        assert "2 earlier questions" in resumed.before
        ask(resumed, "What makes ATP?")
        resumed.expect("produces ATP")
        resumed.expect(r"\[1\].*Cells.*\[papers\]")
        resumed.expect_exact(PROMPT)
        resumed.sendeof()
        resumed.expect(pexpect.EOF)
    finally:
        resumed.close(force=True)
    assert resumed.exitstatus == 0
    # The resumed question was asked with the saved conversation, without the cancelled one.
    users = [m["content"] for m in stub.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["What is the capital of France?", "How much sun does basil need?", "What makes ATP?"]
    assert len(SessionStore().load("tty").turns) == 3


def test_citations_wrap_with_a_hanging_indent_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    monkeypatch.setattr(output, "out", Console(file=screen, force_terminal=True, width=80, color_system=None))
    prose = "The river Seine runs through Paris, the capital of France, " * 5
    cited = Citation(
        index=1, database="notes", document_id="d1", document_title="France", chunk_id="c1", content=prose
    )
    render.citations([cited], "capital of France", heading=False)
    head, *body = screen.getvalue().splitlines()
    assert head.startswith("[1] France") and head.endswith("[notes]")
    assert len(body) >= 3 and all(len(line) <= 80 for line in body)
    assert all(line.startswith("    ") and not line.startswith("     ") for line in body)  # hanging, alike
    assert " ".join(" ".join(body).split()) == " ".join(prose.split())
