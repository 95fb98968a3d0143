"""`haiku chat` without a terminal and `haiku ask --session`: the real CLI against the scripted server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from haiku_cli.chat.sessions import SessionStore
from tests.capabilities.conftest import kb, kb_template
from tests.cli.chat_script import conversation, question
from tests.cli.openai_stub import answer
from tests.cli.test_ask_command import openai_env

__all__ = ["kb", "kb_template", "openai_env"]

MODEL = ("--model", "openai-chat:test")


def test_questions_from_stdin_are_answered_in_turn(kb, cli, openai_env) -> None:
    stub = openai_env(conversation)
    lines = (
        "What is the capital of France?\n\nAnd how much sun does basil need?\n/help\n/citations\n/sources\n"
    )
    result = cli("chat", *MODEL, "--session", "piped", input=lines)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "The capital of France is **Paris** [1]." in out  # plain: Markdown as written
    assert "Basil needs at least six hours of sun [1]." in out
    assert out.index("Paris") < out.index("Basil needs")
    heads = [line for line in out.splitlines() if line.startswith("[1] ")][:2]  # as answered
    assert len(heads) == 2 and "France" in heads[0] and "[notes]" in heads[0] and "Gardening" in heads[1]
    assert "notes" in out.splitlines()[-2] and "papers" in out.splitlines()[-1]  # /sources
    assert "/citations  everything cited so far, by question" in out  # /help
    cited = out[out.index("Q1: ") :]  # /citations: each question with its numbered, labelled citations
    assert cited.startswith("Q1: What is the capital of France?\n[1] France  [notes]")
    assert cited.index("Q2: And how much sun does basil need?\n[1] Gardening  [notes]") > 0
    # Each question is printed before its answer; the last line says where the session was saved.
    assert out.startswith("> What is the capital of France?\nThe capital of France is **Paris** [1].\n")
    assert "\n> And how much sun does basil need?\nBasil needs" in out
    assert "> /help" not in out and "> /citations" not in out  # commands are not questions
    assert "\x1b[" not in out and result.stderr == (
        f"session piped is saved in {SessionStore().path('piped')} (2 questions); "
        "continue it with haiku chat --session piped\n"
    )
    # The second question was asked with the first one's conversation.
    last = stub.requests[-1]
    assert [m["content"] for m in last["messages"] if m["role"] == "user"] == [
        "What is the capital of France?",
        "And how much sun does basil need?",
    ]
    assert [t.question for t in SessionStore().load("piped").turns] == [
        "What is the capital of France?",
        "And how much sun does basil need?",
    ]


def test_a_failed_question_is_one_line_and_the_next_is_answered(kb, cli, openai_env) -> None:
    def flaky(body):
        if "volcano" in question(body):
            return 500, {"error": {"message": "the GPU caught fire", "type": "server_error"}}
        return conversation(body)

    openai_env(flaky)
    result = cli("chat", *MODEL, "--session", "s", input="Which volcano?\nWhat makes ATP?\n")
    assert "The mitochondrion produces ATP [1]." in result.stdout
    failed, saved = result.stderr.splitlines()
    assert "HTTP 500" in failed and "Traceback" not in result.stderr
    assert saved.startswith("session s is saved in ") and saved.endswith(
        "(1 question); continue it with haiku chat --session s"
    )
    assert result.exit_code == 4  # the worst error of the run, after every line was answered
    assert [t.question for t in SessionStore().load("s").turns] == ["What makes ATP?"]


def test_missing_model_at_start_is_exit_4(kb, cli) -> None:
    result = cli("chat", input="hello\n")
    assert result.exit_code == 4
    assert result.stderr.startswith("haiku: no language model configured")


def test_ask_session_prints_what_ask_prints_and_continues(kb, cli, openai_env) -> None:
    stub = openai_env(conversation)
    plain = cli("ask", "What is the capital of France?", *MODEL)
    first = cli("ask", "What is the capital of France?", *MODEL, "--session", "work")
    assert first.exit_code == 0, first.stderr
    assert first.stdout == plain.stdout and first.stderr == plain.stderr
    second = cli("ask", "And basil?", *MODEL, "--session", "work", "--json")
    data = json.loads(second.stdout)
    # ask's JSON, plus the session it continued (the library's SessionAnswer).
    assert set(data) == {
        "answer", "grounded", "violation", "databases", "not_created", "citations", "quotes", "usage",
        "session",
    }  # fmt: skip
    assert data["session"] == "work"
    assert data["answer"] == "Basil needs at least six hours of sun [1]."
    assert data["databases"] == ["notes", "papers"]
    assert data["citations"][0]["document_title"] == "Gardening"
    users = [m["content"] for m in stub.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["What is the capital of France?", "And basil?"]


def test_other_databases_on_resume_are_refused_unless_rescoped(kb, cli, openai_env) -> None:
    openai_env(conversation)
    assert cli("ask", "capital?", *MODEL, "--session", "w").exit_code == 0
    refused = cli("ask", "atp?", *MODEL, "--session", "w", "-d", "papers")
    assert refused.exit_code == 1
    assert refused.stderr.strip() == (
        "haiku: session 'w' covers notes, papers, not papers; resume it without --database/--db/--filter, "
        "or add --rescope to change what it covers"
    )
    assert len(SessionStore().load("w").turns) == 1
    moved = cli("ask", "atp?", *MODEL, "--session", "w", "-d", "papers", "--rescope", "--json")
    assert json.loads(moved.stdout)["databases"] == ["papers"]


def test_list_and_delete_sessions(kb, cli, openai_env) -> None:
    openai_env(conversation)
    cli("ask", "capital?", *MODEL, "--session", "first")
    cli("ask", "basil?", *MODEL, "--session", "second", "-d", "notes")
    listed = json.loads(cli("chat", "--list-sessions", "--json").stdout)["sessions"]
    assert [(s["name"], s["questions"], s["databases"]) for s in listed] == [
        ("second", 1, ["notes"]),
        ("first", 1, ["notes", "papers"]),
    ]
    text = cli("chat", "--list-sessions").stdout
    assert "second" in text and "first" in text
    deleted = cli("chat", "--delete-session", "first")
    assert deleted.exit_code == 0 and "deleted session first" in deleted.stderr
    assert [s["name"] for s in json.loads(cli("chat", "--list-sessions", "--json").stdout)["sessions"]] == [
        "second"
    ]
    missing = cli("chat", "--delete-session", "first")
    assert missing.exit_code == 1 and "no session named 'first'" in missing.stderr


def test_slow_answer_is_not_streamed_when_piped(kb, cli, openai_env) -> None:
    stub = openai_env(lambda body: answer("Plain."))
    result = cli("chat", *MODEL, "--session", "p", input="hello\n")
    assert result.stdout.splitlines()[:2] == ["> hello", "Plain."]
    assert stub.requests[0].get("stream") is not True


def test_a_database_not_written_yet_is_named_once_and_the_chat_goes_on(
    kb, cli, openai_env, write_config, tmp_path
) -> None:
    known = "".join(f'{name} = "{loc.uri}"\n' for name, loc in kb.locations.items())
    write_config(f'[databases]\n{known}later = "{tmp_path}/later.lancedb"\n')
    openai_env(conversation)
    lines = "What is the capital of France?\nAnd how much sun does basil need?\n"
    result = cli("chat", *MODEL, "--session", "s", input=lines)
    assert result.exit_code == 0, result.stderr
    assert "Paris" in result.stdout and "Basil needs" in result.stdout
    assert result.stderr.count("database 'later' is not created yet") == 1
    asked = cli("ask", "Capital?", *MODEL, "--session", "s", "--json")
    assert asked.exit_code == 0, asked.stderr
    assert json.loads(asked.stdout)["not_created"] == ["later"]


def test_listing_sessions_before_any_says_there_are_none(cli) -> None:
    listed = cli("chat", "--list-sessions")
    assert listed.exit_code == 0 and listed.stdout == "no saved sessions\n"
    assert json.loads(cli("chat", "--list-sessions", "--json").stdout) == {"sessions": []}


def test_listing_or_deleting_with_a_conversation_option_is_refused_by_name(cli, tmp_path) -> None:
    # `--session X --list-sessions` used to list every session, as if X filtered it.
    listed = cli("chat", "--session", "x", "--list-sessions")
    assert listed.exit_code == 1 and listed.stdout == ""
    assert listed.stderr == "haiku: --list-sessions takes no other option; drop --session\n"
    both = cli("chat", "--delete-session", "x", "--list-sessions", "-d", "default")
    assert both.exit_code == 1 and "drop --list-sessions and --database" in both.stderr
    by_path = cli("chat", "--list-sessions", "--db", str(tmp_path / "notes.lancedb"))
    assert by_path.exit_code == 1 and by_path.stderr.endswith("drop --db\n")


def test_json_help_says_it_is_for_the_session_list(cli) -> None:
    shown = " ".join(cli("chat", "--help").stdout.split())
    assert "--json With --list-sessions: print the list as JSON." in shown


def test_exit_typed_without_a_slash_leaves_and_help_and_clear_are_commands(kb, cli, openai_env) -> None:
    stub = openai_env(conversation)
    lines = "What is the capital of France?\nhelp\nClear\nexit\nWhat makes ATP?\n"
    result = cli("chat", *MODEL, "--session", "bare", input=lines)
    assert result.exit_code == 0, result.stderr
    assert "/citations  everything cited so far" in result.stdout  # help
    [cleared] = [line for line in result.stderr.splitlines() if line.startswith("new conversation")]
    fresh = cleared.split()[4].rstrip(";")
    assert cleared == (
        f"new conversation in session {fresh}; session bare (1 question) is kept: "
        "resume it with haiku chat --session bare"
    )
    assert "ATP" not in result.stdout  # exit: the question after it was never asked
    asked = [question(body) for body in stub.requests]
    assert "exit" not in asked and "help" not in asked and "What makes ATP?" not in asked
    # Cleared: the answered session is kept whole; the new one, never asked in, is not kept.
    assert [t.question for t in SessionStore().load("bare").turns] == ["What is the capital of France?"]
    assert not SessionStore().exists(fresh)


def test_clear_then_exit_keeps_the_answered_session_listed_and_resumable(kb, cli, openai_env) -> None:
    stub = openai_env(conversation)
    result = cli("chat", *MODEL, input="What is the capital of France?\nclear\nexit\n")
    assert result.exit_code == 0, result.stderr
    listed = json.loads(cli("chat", "--list-sessions", "--json").stdout)["sessions"]
    assert [(s["questions"], s["databases"]) for s in listed] == [(1, ["notes", "papers"])]
    name = listed[0]["name"]
    assert f"session {name} (1 question) is kept: resume it with haiku chat --session {name}" in result.stderr
    # The last line names the session that is saved (the new one, never asked in, is not kept).
    assert result.stderr.splitlines()[-1] == (
        f"session {name} is saved in {SessionStore().path(name)} (1 question); "
        f"continue it with haiku chat --session {name}"
    )
    resumed = cli("chat", *MODEL, "--session", name, input="And how much sun does basil need?\n")
    assert resumed.exit_code == 0, resumed.stderr
    users = [m["content"] for m in stub.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["What is the capital of France?", "And how much sun does basil need?"]


def test_list_and_delete_are_subcommands_and_the_old_flags_still_work(kb, cli, openai_env) -> None:
    openai_env(conversation)
    for name in ("one", "two", "three"):
        assert cli("ask", "capital?", *MODEL, "--session", name).exit_code == 0

    def names(*spelling: str) -> list[str]:
        listed = cli("chat", *spelling, "--json")
        assert listed.exit_code == 0, listed.stderr
        return sorted(s["name"] for s in json.loads(listed.stdout)["sessions"])

    assert names("list") == names("--list-sessions") == ["one", "three", "two"]
    table = cli("chat", "list")
    assert table.exit_code == 0 and table.stdout == cli("chat", "--list-sessions").stdout
    assert all(name in table.stdout for name in ("one", "two", "three"))
    deleted = cli("chat", "delete", "one")
    assert deleted.exit_code == 0 and deleted.stderr == "deleted session one\n"
    old = cli("chat", "--delete-session", "two")
    assert old.exit_code == 0 and old.stderr == "deleted session two\n"
    assert names("list") == ["three"]
    missing = cli("chat", "delete", "one")
    assert missing.exit_code == 1 and missing.stderr.startswith("haiku: no session named 'one'")
    assert cli("chat", "delete").exit_code == 2  # the name is required
    # A conversation's option before the subcommand does nothing for it: refused by name.
    before = cli("chat", "--session", "three", "delete", "three")
    assert before.exit_code == 1 and "drop --session before 'delete'" in before.stderr
    assert names("list") == ["three"]


def test_chat_help_shows_examples_of_each_subcommand(cli, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    for args, wanted in (
        (("chat",), ("haiku chat -d ", "haiku chat list", "haiku chat delete ")),
        (("chat", "list"), ("haiku chat list", "haiku chat list --json")),
        (("chat", "delete"), ("haiku chat delete ",)),
    ):
        shown = cli(*args, "--help").stdout
        examples = [line.strip() for line in shown[shown.index("Examples:") :].splitlines()]
        assert all(any(line.startswith(w) for line in examples) for w in wanted), shown
        assert all(len(line) <= 80 for line in shown.splitlines()), shown


def test_the_shell_completes_the_subcommands_and_saved_session_names(kb, cli, openai_env) -> None:
    openai_env(conversation)
    for name in ("thesis", "travel", "basil"):
        assert cli("ask", "capital?", *MODEL, "--session", name).exit_code == 0

    def complete(line: str) -> list[str]:
        env = {**os.environ, "_HAIKU_COMPLETE": "complete_bash", "COMP_WORDS": line}
        env["COMP_CWORD"] = str(len(line.split()) - (0 if line.endswith(" ") else 1))
        # The installed command: shells complete `haiku`, the name the scripts in completions/ call.
        exe = Path(sys.executable).with_name("haiku")
        done = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60)
        return done.stdout.split()

    assert complete("haiku chat ") == ["list", "delete"]
    assert complete("haiku chat delete t") == ["thesis", "travel"]
    assert complete("haiku chat --delete-session b") == ["basil"]


def test_a_session_file_edited_to_another_database_is_refused_unless_rescoped(kb, cli, openai_env) -> None:
    openai_env(conversation)
    assert cli("ask", "capital?", *MODEL, "--session", "w", "-d", "notes").exit_code == 0
    path = SessionStore().path("w")
    edited = json.loads(path.read_text()) | {"sources": [{"name": "papers", "path": None}]}
    path.write_text(json.dumps(edited))
    for args in (("chat",), ("ask", "atp?")):
        refused = cli(*args, *MODEL, "--session", "w", input="What makes ATP?\n")
        assert refused.exit_code == 1 and refused.stdout == ""
        assert refused.stderr == (
            "haiku: session 'w' was changed outside haiku: its file now covers papers, not what haiku saved; "
            "resume it with --rescope to accept that, or --database NAME --rescope to choose\n"
        )
    assert json.loads(path.read_text()) == edited
    accepted = cli("ask", "What makes ATP?", *MODEL, "--session", "w", "--rescope", "--json")
    assert accepted.exit_code == 0 and json.loads(accepted.stdout)["databases"] == ["papers"]


def test_piped_chat_never_says_saved_when_nothing_was_answered(kb, cli, openai_env) -> None:
    openai_env(lambda body: (500, {"error": {"message": "down", "type": "server_error"}}))
    for args in ((), ("--session", "named")):
        result = cli("chat", *MODEL, *args, input="What is the capital of France?\n")
        assert result.exit_code == 4
        assert result.stdout == "> What is the capital of France?\n"
        assert result.stderr.splitlines()[-1] == "no question was answered; no session was saved"
        assert "is saved" not in result.stderr
    assert SessionStore().summaries().sessions == []
