"""The chat's host loop (no UI): scripted conversations over real databases and a real session store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart

from haiku_cli.agents.question import AskResult
from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.compaction import CAPSULE_HEADING
from haiku_cli.chat.host import ChatHost, ask_in_session
from haiku_cli.chat.sessions import SessionStore
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError, ModelError
from haiku_cli.ingest.rechunking import rebuild
from haiku_cli.store import open_database
from haiku_cli.store.location import Location
from tests.capabilities.analysis_script import execute, last_output
from tests.capabilities.conftest import NOTES
from tests.capabilities.script import _CHUNK_ID, call, chunk_ids, returns, search, text
from tests.capabilities.test_deferred import load
from tests.chat.streaming import Hang, StreamScript
from tests.conftest import fill
from tests.support.resized_embedder import Resized


def prompts(messages: list[ModelMessage]) -> list[str]:
    """The user's questions in a request's history, oldest first."""
    return [
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        # pydantic-ai's own notes (a loaded capability's instructions) ride in user parts too.
        if isinstance(p, UserPromptPart)
        and isinstance(p.content, str)
        and not p.content.startswith("<system>")
    ]


def open_host(ws: Workspace, script: StreamScript, **kwargs: Any) -> ChatHost:
    kwargs.setdefault("session", "talk")
    return anyio.run(lambda: ChatHost.open(ws, model=script.model, **kwargs))


def ask(host: ChatHost, question: str, sink: Callable[[str], None] | None = None) -> AskResult:
    return anyio.run(lambda: host.ask(question, sink))


def cite_latest(messages: list[ModelMessage]) -> Any:
    """Cite the top result of the latest search (earlier questions' results are in the history too)."""
    return call(("cite", {"chunk_ids": _CHUNK_ID.findall(returns(messages, "search")[-1])[:1]}))


def grounded(query: str, answer: str) -> list[Any]:
    return [search(query), cite_latest, text(answer)]


def test_three_questions_with_citations_stream_and_are_saved(kb: Workspace) -> None:
    script = StreamScript(
        *grounded("capital of France", "The capital is **Paris** [1]."),
        *grounded("basil sun", "Basil wants six hours of sun [1]."),
        *grounded("mitochondrion", "It makes ATP [1]."),
    )
    host = open_host(kb, script)
    streamed: list[str] = []
    answers = [
        ask(host, q, streamed.append)
        for q in ("What is the capital of France?", "And how much sun does basil need?", "What makes ATP?")
    ]
    assert [a.answer for a in answers] == [
        "The capital is **Paris** [1].",
        "Basil wants six hours of sun [1].",
        "It makes ATP [1].",
    ]
    assert all(a.grounded and not a.violation for a in answers)
    assert [(a.citations[0].database, a.citations[0].document_title) for a in answers] == [
        ("notes", "France"),
        ("notes", "Gardening"),
        ("papers", "Cells"),
    ]
    # The text arrived in pieces, each a longer prefix of the answer.
    assert "The capital" in streamed and "The capital is **Paris** [1]." in streamed
    # Each question's first request carried the whole conversation before it.
    first_requests = [script.seen[i] for i in (0, 3, 6)]
    assert [len(prompts(r)) for r in first_requests] == [1, 2, 3]
    # On disk: three turns with their citations, the messages and every capability's state.
    saved = SessionStore().load("talk")
    assert [t.question for t in saved.turns][-1] == "What makes ATP?"
    assert [t.citations[0].document_title for t in saved.turns] == ["France", "Gardening", "Cells"]
    assert prompts(saved.history()) == [t.question for t in saved.turns]
    assert saved.state["citation_policy"]["history"] == ["grounded", "grounded"]
    assert saved.state["citation_policy"]["outcome"] == "grounded"
    assert saved.revision == 3


def test_cancelled_answer_leaves_the_session_as_it_was_and_the_next_works(kb: Workspace) -> None:
    script = StreamScript(
        *grounded("capital of France", "Paris [1]."),
        search("basil"),
        Hang("Basil needs"),
        *grounded("mitochondrion", "ATP [1]."),
    )
    host = open_host(kb, script)
    ask(host, "Capital of France?")
    path = SessionStore().path("talk")
    before, session_before = path.read_bytes(), host.session
    state_before = json.dumps(host.session.state, sort_keys=True)

    async def cancel_mid_answer() -> None:
        async with anyio.create_task_group() as tg:

            def sink(text: str) -> None:
                if text.startswith("Basil needs"):
                    tg.cancel_scope.cancel()  # what Ctrl-C does in the terminal

            tg.start_soon(host.ask, "How much sun for basil?", sink)

    anyio.run(cancel_mid_answer)
    assert len(script.seen) == 5  # the slow answer was really under way
    assert path.read_bytes() == before and host.session is session_before
    assert json.dumps(host.session.state, sort_keys=True) == state_before  # the run worked on a copy
    follow_up = ask(host, "What makes ATP?")
    assert follow_up.grounded and follow_up.citations[0].document_title == "Cells"
    # The follow-up is the second question, not a resumption of the cancelled one.
    assert SessionStore().load("talk").state["retrieval"]["asked"] == {
        "1": "Capital of France?",
        "2": "What makes ATP?",
    }
    # The cancelled question is not part of the conversation the model sees.
    assert prompts(script.seen[-3]) == ["Capital of France?", "What makes ATP?"]
    assert [t.question for t in SessionStore().load("talk").turns] == [
        "Capital of France?",
        "What makes ATP?",
    ]


def test_failed_model_call_is_a_model_error_and_the_next_question_works(kb: Workspace) -> None:
    def unavailable(messages: list[ModelMessage]) -> Any:
        raise ModelHTTPError(503, "test", {"error": "overloaded"})

    script = StreamScript(
        *grounded("capital of France", "Paris [1]."),
        unavailable,
        *grounded("basil", "Six hours [1]."),
    )
    host = open_host(kb, script)
    ask(host, "Capital of France?")
    before = SessionStore().path("talk").read_bytes()
    with pytest.raises(ModelError, match="HTTP 503"):
        ask(host, "Basil?", lambda _: None)
    assert SessionStore().path("talk").read_bytes() == before
    assert ask(host, "Basil, then?").citations[0].document_title == "Gardening"
    assert prompts(script.seen[-1]) == ["Capital of France?", "Basil, then?"]


def test_resumed_session_keeps_citing_an_earlier_chunk_by_id(kb: Workspace, workspace) -> None:
    first = StreamScript(*grounded("capital of France", "Paris [1]."))
    ask(open_host(kb, first), "Capital of France?")
    earlier = SessionStore().load("talk").turns[0].citations[0]

    # A new process: a fresh workspace, the session read back from disk; the model cites without searching.
    def cite_earlier(messages: list[ModelMessage]) -> Any:
        return call(("cite", {"chunk_ids": [earlier.chunk_id]}))

    second = StreamScript(cite_earlier, text("As said before, Paris [1]."))
    resumed = open_host(workspace(), second)
    answer = ask(resumed, "Remind me of the capital?")
    assert answer.grounded
    [citation] = answer.citations
    assert (citation.chunk_id, citation.database, citation.index) == (earlier.chunk_id, "notes", 1)
    assert earlier.chunk_id in chunk_ids(
        second.seen[0]
    )  # the earlier search results came back with the session
    assert [t.question for t in SessionStore().load("talk").turns] == [
        "Capital of France?",
        "Remind me of the capital?",
    ]


def _rebuild(ws: Workspace, name: str, max_tokens: int | None = None) -> None:
    """Rebuild a configured database (at another chunk size when `max_tokens` is given)."""
    db = open_database(ws.locations[name], writable=True)
    embedder = ws.embedder if max_tokens is None else Resized(ws.embedder, max_tokens)
    anyio.run(lambda: rebuild(db, embedder))


def _still_cites_its_earlier_chunk(kb: Workspace, workspace, change: Callable[[Citation], None]) -> None:
    """A session's first citation, the databases changed by `change`, then the same chunk cited again."""
    ask(open_host(kb, StreamScript(*grounded("capital of France", "Paris [1]."))), "Capital of France?")
    earlier = SessionStore().load("talk").turns[0].citations[0]
    change(earlier)

    def cite_earlier(messages: list[ModelMessage]) -> Any:
        return call(("cite", {"chunk_ids": [earlier.chunk_id]}))

    answer = ask(open_host(workspace(), StreamScript(cite_earlier, text("Paris [1]."))), "The capital?")
    assert answer.grounded and not answer.violation
    assert [c.model_dump(exclude={"index"}) for c in answer.citations] == [
        earlier.model_dump(exclude={"index"})
    ]


def test_a_resumed_session_cites_its_earlier_chunk_after_a_rebuild(kb: Workspace, workspace) -> None:
    _still_cites_its_earlier_chunk(kb, workspace, lambda earlier: _rebuild(kb, "notes"))


def test_a_resumed_session_cites_its_earlier_chunk_after_its_document_is_re_added_with_new_metadata(
    kb: Workspace, workspace
) -> None:
    def re_add(earlier: Citation) -> None:
        france = {**NOTES[0], "metadata": {"reviewed": "yes"}}
        assert fill(kb, kb.locations["notes"], [france]) == [earlier.document_id]  # updated in place

    _still_cites_its_earlier_chunk(kb, workspace, re_add)


def test_a_chunk_changed_by_a_rebuild_is_reported_to_the_model_which_searches_again(
    kb: Workspace, workspace
) -> None:
    ask(open_host(kb, StreamScript(*grounded("capital of France", "Paris [1]."))), "Capital of France?")
    earlier = SessionStore().load("talk").turns[0].citations[0]
    _rebuild(kb, "notes", max_tokens=16)  # every note is cut in smaller pieces: new chunks, new ids

    def cite_earlier(messages: list[ModelMessage]) -> Any:
        return call(("cite", {"chunk_ids": [earlier.chunk_id]}))

    script = StreamScript(cite_earlier, *grounded("capital of France", "Paris [1]."))
    answer = ask(open_host(workspace(), script), "The capital?")
    [told] = returns(script.seen[1], "cite")[-1:]
    assert f"{earlier.chunk_id!r} is not a chunk id in the searched databases" in told
    assert "search again" in told
    [citation] = answer.citations
    assert answer.grounded and citation.chunk_id != earlier.chunk_id and "Paris" in citation.content


def test_resuming_with_another_selection_is_refused_unless_rescoped(kb: Workspace) -> None:
    script = StreamScript(*grounded("capital of France", "Paris [1]."), *grounded("cells", "ATP [1]."))
    host = open_host(kb, script)
    ask(host, "Capital of France?")
    before = SessionStore().path("talk").read_bytes()
    with pytest.raises(InputError, match=r"session 'talk' covers notes, papers, not papers; .*--rescope"):
        open_host(kb, script, selection=kb.select_many(["papers"]))
    with pytest.raises(InputError, match="filter"):
        open_host(kb, script, document_filter="title = 'Cells'")
    assert SessionStore().path("talk").read_bytes() == before
    # No selection given: the session's own databases.
    assert open_host(kb, script).selection.names == ["notes", "papers"]
    # The same selection spelled out is not a change.
    assert open_host(kb, script, selection=kb.select_many(["papers", "notes"])).session.revision == 1
    rescoped = open_host(kb, script, selection=kb.select_many(["papers"]), rescope=True)
    answer = ask(rescoped, "What makes ATP?")
    assert {c.database for c in answer.citations} == {"papers"}
    assert SessionStore().load("talk").sources[0].name == "papers"


def test_unnamed_chats_get_distinct_saved_sessions(kb: Workspace) -> None:
    script = StreamScript(*grounded("capital of France", "Paris [1]."), *grounded("cells", "ATP [1]."))
    one, two = open_host(kb, script, session=None), open_host(kb, script, session=None)
    ask(one, "Capital?")
    ask(two, "ATP?")
    names = [s.name for s in SessionStore().summaries().sessions]
    assert len(names) == 2 and all(n.startswith("chat-") for n in names)
    # One left without a question is not kept; one with questions is.
    unused = open_host(kb, script, session=None)
    assert len(SessionStore().summaries().sessions) == 3
    unused.close()
    one.close()
    assert sorted(s.name for s in SessionStore().summaries().sessions) == sorted(names)


def test_no_model_configured_fails_at_start(kb: Workspace) -> None:
    with pytest.raises(ModelError, match="no language model configured"):
        anyio.run(lambda: ChatHost.open(kb, session="talk"))
    assert not SessionStore().exists("talk")


def test_ask_in_session_continues_the_named_session(kb: Workspace) -> None:
    script = StreamScript(*grounded("capital of France", "Paris [1]."), *grounded("basil", "Sun [1]."))
    first = anyio.run(lambda: ask_in_session(kb, None, "Capital?", session="notes-q", model=script.model))
    second = anyio.run(lambda: ask_in_session(kb, None, "Basil?", session="notes-q", model=script.model))
    assert first.grounded and second.grounded
    assert prompts(script.seen[-1]) == ["Capital?", "Basil?"]


def test_a_database_not_written_yet_is_skipped_until_it_is(
    kb: Workspace, write_config, workspace, tmp_path: Path
) -> None:
    known = "".join(f'{name} = "{loc.uri}"\n' for name, loc in kb.locations.items())
    write_config(f'[databases]\n{known}later = "{tmp_path}/later.lancedb"\n')
    ws = workspace()
    script = StreamScript(*grounded("capital of France", "Paris [1]."), *grounded("Rome", "Rome [1]."))
    first = anyio.run(lambda: ask_in_session(ws, None, "Capital?", session="s", model=script.model))
    assert first.grounded and first.citations[0].database == "notes"
    assert first.databases == ["notes", "papers"] and first.not_created == ["later"]
    assert not (tmp_path / "later.lancedb").exists()
    # Written since: the resumed session's next question covers it and can cite it.
    fill(ws, ws.lookup("later"), [{"text": "Rome is the capital of Italy.", "title": "Italy"}])
    second = anyio.run(lambda: ask_in_session(ws, None, "And Italy?", session="s", model=script.model))
    assert second.databases == ["notes", "papers", "later"] and second.not_created == []
    assert second.citations[0].database == "later"


def test_clear_starts_a_new_session_and_keeps_the_answered_one_whole(kb: Workspace) -> None:
    script = StreamScript(*grounded("capital of France", "Paris [1]."), *grounded("cells", "ATP [1]."))
    host = open_host(kb, script)
    ask(host, "Capital?")
    before = SessionStore().path("talk").read_bytes()
    kept = host.clear()
    assert kept is not None and kept.name == "talk" and kept.resume_command() == "haiku chat --session talk"
    assert SessionStore().path("talk").read_bytes() == before  # not touched
    assert host.session.name != "talk" and host.session.name.startswith("chat-")
    assert host.session.sources == kept.sources and host.session.turns == []
    ask(host, "ATP?")
    assert prompts(script.seen[-1]) == ["ATP?"]
    host.close()
    assert [t.question for t in SessionStore().load("talk").turns] == ["Capital?"]
    assert [t.question for t in SessionStore().load(host.session.name).turns] == ["ATP?"]


def test_a_haiku_named_session_cleared_and_left_keeps_its_answered_question(kb: Workspace) -> None:
    script = StreamScript(*grounded("capital of France", "Paris [1]."), *grounded("cells", "ATP [1]."))
    host = open_host(kb, script, session=None)
    ask(host, "Capital?")
    answered = host.session.name
    kept = host.clear()
    assert kept is not None and kept.name == answered
    host.close()  # the new, empty session goes; the answered one stays
    [listed] = SessionStore().summaries().sessions
    assert (listed.name, listed.questions) == (answered, 1)
    resumed = open_host(kb, script, session=answered)
    assert [t.question for t in resumed.session.turns] == ["Capital?"]
    ask(resumed, "ATP?")
    assert prompts(script.seen[-1]) == ["Capital?", "ATP?"]


def test_clear_before_any_question_keeps_the_same_session(kb: Workspace) -> None:
    host = open_host(kb, StreamScript(), session=None)
    name = host.session.name
    assert host.clear() is None and host.session.name == name
    host.close()
    assert SessionStore().summaries().sessions == []


def test_leaving_never_deletes_a_session_answered_elsewhere(kb: Workspace) -> None:
    script = StreamScript(*grounded("capital of France", "Paris [1]."))
    idle = open_host(kb, script, session=None)
    # Another chat resumes the name haiku gave and answers in it before this one leaves.
    ask(open_host(kb, script, session=idle.session.name), "Capital?")
    idle.close()
    assert [t.question for t in SessionStore().load(idle.session.name).turns] == ["Capital?"]


def test_session_files_stay_in_the_data_dir(kb: Workspace, isolated: Path) -> None:
    ask(open_host(kb, StreamScript(*grounded("capital", "Paris [1]."))), "Capital?")
    # Beside the sessions: the key sealing what each covers.
    assert sorted(p.name for p in (isolated / "data" / "sessions").iterdir()) == [".scope-key", "talk.json"]


def test_analysis_chat_lets_the_model_compute_or_search(kb: Workspace) -> None:
    program = "import json\nfor d in list_documents():\n    print(d['title'])"
    script = StreamScript(
        load("analysis"),
        execute(program),
        *grounded("capital of France", "There are four documents; France is one [1]."),
        *grounded("cells", "The mitochondrion [1]."),
    )
    host = open_host(kb, script, analysis=True)
    first = ask(host, "How many documents, and which is about France?")
    assert "Cells" in last_output(script.seen[2])  # the program really ran over both databases
    # Analysis is deferred: its tool (and instructions) arrive when the model loads it.
    assert {t.name for t in script.info[0].function_tools} == {"search", "cite", "load_capability"}
    assert {t.name for t in script.info[1].function_tools} >= {"search", "cite", "execute_code"}
    assert first.grounded and first.citations[0].document_title == "France"
    saved = SessionStore().load("talk")
    [execution] = [e for state in saved.state.values() for e in state.get("executions", [])]
    assert execution["code"] == program and execution["ok"] is True
    assert ask(host, "And what makes ATP?").citations[0].document_title == "Cells"
    # One question on, the saved state keeps the program as a receipt; the saved history keeps it whole.
    saved = SessionStore().load("talk")
    [execution] = [e for state in saved.state.values() for e in state.get("executions", [])]
    assert execution["code"] == "" and execution["output_chars"] > 0
    assert "for d in list_documents()" in str(saved.messages)


def test_a_streamed_draft_that_cites_nothing_is_sent_back_and_replaced(kb: Workspace) -> None:
    draft = text("Paris, I think.")
    script = StreamScript(search("capital of France"), draft, cite_latest, text("Paris [1]."))
    host = open_host(kb, script)
    streamed: list[str] = []
    answer = ask(host, "Capital of France?", streamed.append)
    assert "Paris, I think." in streamed  # the host saw the draft while it streamed...
    assert streamed[-1] == "Paris [1]."  # ...and then the answer that replaced it
    assert answer.answer == "Paris [1]." and answer.grounded and not answer.violation
    assert SessionStore().load("talk").state["citation_policy"]["outcome"] == "grounded"


def test_a_session_resumes_with_or_without_analysis(kb: Workspace) -> None:
    program = "print(len(list_documents()))"
    script = StreamScript(
        *grounded("capital of France", "Paris [1]."),
        load("analysis"),
        execute(program),
        *grounded("cells", "Four documents; ATP [1]."),
        *grounded("basil", "Six hours [1]."),
    )
    assert ask(open_host(kb, script), "Capital?").grounded
    computed = ask(open_host(kb, script, analysis=True), "How many documents, and what makes ATP?")
    assert computed.grounded and computed.citations[0].document_title == "Cells"
    assert last_output(script.seen[5]).endswith("stdout:\n4")
    plain = ask(open_host(kb, script), "Basil?")
    assert plain.grounded and plain.citations[0].document_title == "Gardening"
    assert prompts(script.seen[-1]) == ["Capital?", "How many documents, and what makes ATP?", "Basil?"]
    # Resumed without --analysis, the earlier program's output is still sent as a receipt.
    [program_output] = returns(script.seen[-1], "execute_code")
    assert program_output.startswith("[A program for the earlier question 'How many documents")


def test_the_chat_sends_earlier_evidence_compacted_and_saves_it_whole(kb: Workspace) -> None:
    script = StreamScript(
        *grounded("capital of France", "Paris [1]."),
        *grounded("basil sun", "Six hours [1]."),
        *grounded("mitochondrion", "ATP [1]."),
    )
    host = open_host(kb, script)
    for q in ("Capital?", "Basil?", "ATP?"):
        ask(host, q)
    third = script.seen[6]  # the first request of the third question
    sent = returns(third, "search")
    assert len(sent) == 2 and all(r.startswith("[Search ") for r in sent)  # receipts, not results
    assert sum(CAPSULE_HEADING in r for r in sent) == 1
    capsule = next(r for r in sent if CAPSULE_HEADING in r)
    assert "river Seine" in capsule and "six hours of sun" in capsule  # the cited chunks, still citable
    # The saved conversation keeps every search result whole.
    saved = returns(SessionStore().load("talk").history(), "search")
    assert len(saved) == 3 and all(r.startswith("Results for") for r in saved)


def test_a_tampered_session_file_cannot_reach_an_unconfigured_database(kb: Workspace, tmp_path: Path) -> None:
    # A real database nobody configured: a session file naming it must not open it.
    planted = tmp_path / "planted.lancedb"
    fill(kb, Location("planted", str(planted)), [{"text": "The vault code is 4711.", "title": "Secret"}])
    script = StreamScript(*grounded("capital of France", "Paris [1]."), *grounded("vault code", "4711 [1]."))
    ask(open_host(kb, script, selection=kb.select_many(["notes"])), "Capital of France?")
    path = SessionStore().path("talk")
    session = json.loads(path.read_text())
    for sources, refused in (
        ([{"name": "planted", "path": str(planted)}], r"by path \(.*planted\.lancedb\), which is not"),
        ([{"name": "ghost", "path": None}], r"'ghost', which is not configured \(notes, papers\)"),
    ):
        session["sources"] = sources
        session["state"]["retrieval"]["sources"] = sources
        path.write_text(json.dumps(session))
        with pytest.raises(InputError, match="was changed outside haiku"):
            open_host(kb, script)
        # Even accepted as edited, the file reaches only what the user may reach.
        with pytest.raises(InputError, match=refused):
            open_host(kb, script, rescope=True)
    # The user who started a session with --db gives the path again: the command line is the authority.
    session["sources"] = [{"name": "planted", "path": str(planted)}]
    path.write_text(json.dumps(session))
    with pytest.raises(InputError, match="was changed outside haiku"):
        open_host(kb, script, selection=kb.select_many(paths=[planted]))
    opened = open_host(kb, script, selection=kb.select_many(paths=[planted]), rescope=True)
    assert opened.selection.names == ["planted"]


@pytest.mark.parametrize(
    ("edit", "covers"),
    [
        ({"sources": [{"name": "papers", "path": None}]}, "papers (filter \"title = 'France'\")"),
        ({"sources": []}, "no database (filter \"title = 'France'\")"),
        ({"document_filter": None}, "notes"),
        ({"scope_seal": None}, None),
    ],
)
def test_a_session_file_whose_scope_was_edited_is_refused_unless_rescoped(
    kb: Workspace, edit: dict[str, Any], covers: str
) -> None:
    script = StreamScript(*grounded("capital of France", "Paris [1]."), *grounded("cells", "ATP [1]."))
    started = open_host(kb, script, selection=kb.select_many(["notes"]), document_filter="title = 'France'")
    ask(started, "Capital of France?")
    path = SessionStore().path("talk")
    assert open_host(kb, script).selection.names == ["notes"]  # untouched: resumed as started
    session = {**json.loads(path.read_text()), **edit}
    path.write_text(json.dumps(session))
    with pytest.raises(InputError) as refused:
        open_host(kb, script)
    if covers is None:  # no seal: not said to be edited, since that cannot be known
        assert str(refused.value) == (
            "session 'talk' has no seal of what it covers (written by an older haiku, or the seal removed): "
            "its file names notes (filter \"title = 'France'\"); resume it with --rescope to accept that, "
            "or --database NAME --rescope to choose"
        )
    else:
        assert str(refused.value).startswith("session 'talk' was changed outside haiku: its file now covers ")
        assert f"covers {covers}, not what haiku saved; resume it with --rescope" in str(refused.value)
    assert SessionStore().path("talk").read_text() == json.dumps(session)  # nothing written
    if session["sources"]:
        # Accepted: the next answer seals the file's scope again, and it resumes without --rescope.
        ask(open_host(kb, script, rescope=True), "What makes ATP?")
        assert open_host(kb, script).session.revision == 2
    else:
        with pytest.raises(InputError, match="names no database; resume it with --database NAME --rescope"):
            open_host(kb, script, rescope=True)
        moved = open_host(kb, script, selection=kb.select_many(["papers"]), rescope=True)
        ask(moved, "What makes ATP?")
        assert open_host(kb, script).selection.names == ["papers"]


def test_a_removed_key_makes_every_session_ask_for_rescope(kb: Workspace) -> None:
    script = StreamScript(*grounded("capital of France", "Paris [1]."))
    ask(open_host(kb, script), "Capital of France?")
    (SessionStore().root / ".scope-key").unlink()
    with pytest.raises(
        InputError, match=r"cannot be checked, as the key sealing sessions \(.*\.scope-key\) is gone"
    ):
        open_host(kb, script)
    assert open_host(kb, script, rescope=True).selection.names == ["notes", "papers"]
