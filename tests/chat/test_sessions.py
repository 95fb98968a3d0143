"""The session store: atomic whole-file saves, refusal of lost updates, listing and deleting."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from haiku_cli.capabilities.state import Source
from haiku_cli.chat.sessions import Session, SessionStore, Turn
from haiku_cli.config.paths import sessions_dir
from haiku_cli.errors import InputError


def answered(session: Session, question: str) -> Session:
    messages = [
        *session.history(),
        ModelRequest(parts=[UserPromptPart(question)]),
        ModelResponse(parts=[TextPart(f"answer to {question}")]),
    ]
    turn = Turn(question=question, answer="a", grounded=False, asked_at=datetime.now(UTC))
    return session.answered(turn, messages, {"retrieval": {"answer": len(session.turns) + 1}})


def test_sessions_live_under_haiku_data_dir(isolated: Path) -> None:
    assert sessions_dir() == isolated / "data" / "sessions"


def test_round_trip_of_messages_state_and_scope() -> None:
    store = SessionStore()
    session = Session.start("s1", [Source(name="notes"), Source(name="x", path="/tmp/x.lancedb")], "a = 1")
    saved = store.save(answered(session, "q1"))
    loaded = store.load("s1")
    assert loaded == saved and loaded.revision == 1
    [request, response] = loaded.history()
    assert isinstance(request, ModelRequest) and request.parts[0].content == "q1"
    assert isinstance(response, ModelResponse) and response.parts[0].content == "answer to q1"
    assert loaded.state == {"retrieval": {"answer": 1}}
    assert loaded.same_scope([Source(name="x", path="/tmp/x.lancedb"), Source(name="notes")], "a = 1")
    assert not loaded.same_scope([Source(name="notes")], "a = 1")
    assert not loaded.same_scope(loaded.sources, None)


def test_save_is_atomic_and_leaves_no_temporary_files(monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore()
    first = store.save(answered(Session.start("s1", [Source(name="notes")]), "q1"))
    before = store.path("s1").read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("haiku_cli.chat.sessions.os.replace", broken_replace)
    with pytest.raises(OSError):
        store.save(answered(first, "q2"))
    assert store.path("s1").read_bytes() == before
    assert sorted(p.name for p in store.root.iterdir()) == [".scope-key", "s1.json"]


def test_a_save_over_another_process_save_is_refused() -> None:
    store = SessionStore()
    loaded_twice = store.save(Session.start("s1", [Source(name="notes")]))
    store.save(answered(loaded_twice, "from the first chat"))
    with pytest.raises(InputError, match="changed by another haiku process"):
        store.save(answered(loaded_twice, "from the second chat"))
    assert [t.question for t in store.load("s1").turns] == ["from the first chat"]


def test_a_data_dir_that_is_a_file_is_named_not_blamed_on_another_process(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a folder")  # HAIKU_DATA_DIR naming a file
    store = SessionStore(tmp_path / "data" / "sessions")
    with pytest.raises(InputError) as raised:
        store.save(Session.start("s1", [Source(name="notes")]))
    assert str(raised.value) == f"cannot save session 's1': {tmp_path / 'data'} is a file, not a folder"
    assert (tmp_path / "data").read_text() == "not a folder"


def test_list_newest_first_and_delete() -> None:
    store = SessionStore()
    store.save(answered(Session.start("old", [Source(name="notes")]), "q"))
    store.save(answered(answered(Session.start("new", [Source(name="a"), Source(name="b")]), "q"), "r"))
    (store.root / "broken.json").write_text("{not json", encoding="utf-8")
    summaries = store.summaries().sessions
    assert [(s.name, s.questions, s.databases) for s in summaries] == [
        ("new", 2, ["a", "b"]),
        ("old", 1, ["notes"]),
    ]
    store.delete("old")
    assert not store.exists("old")
    with pytest.raises(InputError, match="no session named 'old'"):
        store.delete("old")


def test_unreadable_session_names_the_file_and_the_way_out() -> None:
    store = SessionStore()
    store.root.mkdir(parents=True)
    store.path("bad").write_text('{"name": "bad"}', encoding="utf-8")
    with pytest.raises(
        InputError, match=r"session 'bad' .*bad\.json.* is unreadable .*haiku chat delete bad"
    ):
        store.load("bad")
    with pytest.raises(InputError, match=r"no session named 'missing'; see haiku chat list"):
        store.load("missing")


@pytest.mark.parametrize("name", ["", "../escape", ".hidden", "a/b", "x" * 65, "sp ace"])
def test_unsafe_names_are_refused(name: str) -> None:
    with pytest.raises(InputError, match="invalid session name"):
        SessionStore().path(name)


def test_the_scope_is_sealed_with_a_key_only_the_user_can_read() -> None:
    store = SessionStore()
    saved = store.save(Session.start("s1", [Source(name="notes")]))
    assert store.scope_intact(saved) and store.scope_intact(store.load("s1"))
    assert (store.root / ".scope-key").stat().st_mode & 0o777 == 0o600
    assert not store.scope_intact(saved.rescoped([Source(name="papers")], None))
    assert not store.scope_intact(saved.rescoped([Source(name="notes")], "title = 'x'"))
    # Saving what the host rescoped seals it again.
    assert store.scope_intact(store.save(saved.rescoped([Source(name="papers")], None)))
