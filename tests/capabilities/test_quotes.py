"""Quoted passages checked against the cited chunks; the model told once when a quote is not there."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest

from haiku_cli.capabilities import CitationPolicy, HaikuDeps, PolicyState, RetrievalCapability
from haiku_cli.capabilities.citations import Citation
from haiku_cli.capabilities.policy import QUOTE_TAG
from haiku_cli.capabilities.quotes import check_quotes, quotes_in
from haiku_cli.databases.workspace import Workspace
from tests.agents.test_ask import ask_sync
from tests.capabilities.script import Script, call, chunk_ids, cite_first, search, text
from tests.capabilities.test_policy import streamed, streaming_agent
from tests.chat.streaming import StreamScript

QUESTION = "What is the capital of France?"


def _told(script: Script) -> int:
    """How many requests the model got that carry the quote redirect (each says it once, when new)."""
    return sum(
        QUOTE_TAG in str(getattr(part, "content", ""))
        for m in script.seen[-1]
        if isinstance(m, ModelRequest)
        for part in m.parts
    )


def _citation(content: str) -> Citation:
    return Citation(index=1, database="notes", document_id="d", chunk_id="c1", content=content)


def test_quotes_are_found_in_marks_and_blockquotes_but_short_terms_are_not_quotes() -> None:
    answer = (
        'It says "the capital of France is Paris" [1], a "major city".\n\n> It lies on\n> the river Seine.\n'
    )
    assert quotes_in(answer) == ["the capital of France is Paris", "It lies on the river Seine."]
    assert quotes_in("So-called “real” answers, “in short”.") == []


def test_a_quote_matches_whatever_its_case_spacing_and_punctuation_and_an_ellipsis_skips() -> None:
    cited = [_citation("The capital of France is Paris.  It lies on the river Seine.")]
    checks = check_quotes(
        [
            "THE capital of France, is Paris",
            "the capital of France … on the river Seine",
            "the capital of Spain is Madrid",
            "river Seine ... capital of France",  # out of order
        ],
        cited,
    )
    assert [(c.verified, c.chunk) for c in checks] == [
        (True, "c1"),
        (True, "c1"),
        (False, None),
        (False, None),
    ]


def test_a_quote_the_cited_chunk_holds_is_verified_and_nothing_is_sent_back(kb: Workspace) -> None:
    script = Script(
        search("capital of France"), cite_first(), text('The note says "the capital of France is Paris" [1].')
    )
    result = ask_sync(kb, QUESTION, script)
    [quote] = result.quotes
    assert quote.verified and quote.chunk == result.citations[0].chunk_id
    assert len(script.seen) == 3 and _told(script) == 0


def test_a_quote_not_in_the_evidence_is_flagged_and_the_model_told_once(kb: Workspace) -> None:
    invented = 'The note says "Paris has been the capital since the year 987" [1].'
    script = Script(search("capital of France"), cite_first(), text(invented), text(invented))
    result = ask_sync(kb, QUESTION, script)
    assert len(script.seen) == 4 and _told(script) == 1  # sent back once; the same answer then stands
    assert result.grounded and result.answer == invented
    assert [(q.text, q.verified, q.chunk) for q in result.quotes] == [
        ("Paris has been the capital since the year 987", False, None)
    ]
    assert result.model_dump(mode="json")["quotes"][0]["verified"] is False


def test_a_quote_passed_to_cite_is_checked_too(kb: Workspace) -> None:
    def cite_with(quote: str):
        return lambda messages: call(("cite", {"chunk_ids": chunk_ids(messages)[:1], "quote": quote}))

    script = Script(
        search("capital of France"),
        cite_with("It lies on the river Thames"),
        text("Paris [1]."),
        text("Paris [1]."),
    )
    result = ask_sync(kb, QUESTION, script)
    assert [(q.text, q.verified) for q in result.quotes] == [("It lies on the river Thames", False)]
    assert _told(script) == 1


def test_a_streamed_answer_quoting_what_is_not_in_the_evidence_is_sent_back_before_the_host_sees_it(
    kb: Workspace,
) -> None:
    invented = 'The note says "Paris has been the capital since the year 987" [1].'
    fixed = 'The note says "the capital of France is Paris" [1].'
    script = StreamScript(search("capital of France"), cite_first(), text(invented), text(fixed))
    deps = HaikuDeps()
    output, messages, seen = streamed(streaming_agent(kb, script), deps)
    assert output == fixed and len(script.seen) == 4 and _told(script) == 1
    assert not any("987" in t for t in seen)  # the draft never reached the host
    # Nor the stored history. (Its words: "987" alone also turns up in the history's random ids and
    # timestamps, which failed this test in 2 of 5 full runs.)
    assert "since the year 987" not in str(messages)
    assert deps.get("citation_policy", PolicyState).quote_held_back


def test_a_streamed_answer_is_told_about_its_quotes_once_and_a_verified_one_streams_as_it_is(
    kb: Workspace,
) -> None:
    invented = 'The note says "Paris has been the capital since the year 987" [1].'
    script = StreamScript(search("capital of France"), cite_first(), text(invented), text(invented))
    output, _, seen = streamed(streaming_agent(kb, script), HaikuDeps())
    assert output == invented and len(script.seen) == 4 and _told(script) == 1  # the same answer then stands
    assert seen[-1] == invented
    verified = 'The note says "the capital of France is Paris" [1].'
    script = StreamScript(search("capital of France"), cite_first(), text(verified))
    output, _, seen = streamed(streaming_agent(kb, script), HaikuDeps())
    assert output == verified and len(script.seen) == 3 and _told(script) == 0


def test_a_streamed_draft_sent_back_uncited_has_its_quotes_checked_after_the_citation_redirect(
    kb: Workspace,
) -> None:
    script = StreamScript(
        search("capital of France"),
        text("Paris."),  # held back: uncited
        cite_first(),
        text('It says "the river Thames runs through Paris" [1].'),  # held back: quote not in the chunk
        text("Paris [1]."),
    )
    deps = HaikuDeps()
    output, _, seen = streamed(streaming_agent(kb, script), deps)
    assert output == "Paris [1]." and len(script.seen) == 5 and _told(script) == 1
    assert not any("Thames" in t or t == "Paris." for t in seen)
    policy = deps.get("citation_policy", PolicyState)
    assert policy.held_back and policy.quote_held_back and policy.outcome == "grounded"


def test_with_quotes_flagged_a_streamed_answer_is_never_sent_back_for_its_quotes_but_flagged(
    kb: Workspace,
) -> None:
    invented = 'The note says "Paris has been the capital since the year 987" [1].'
    script = StreamScript(
        search("capital of France"),
        text("Paris."),  # held back still: it would end the question uncited
        cite_first(),
        text(invented),
    )
    agent = Agent(
        script.model,
        deps_type=HaikuDeps,
        capabilities=[RetrievalCapability(kb), CitationPolicy(quotes="flag")],
    )
    deps = HaikuDeps()
    output, _, seen = streamed(agent, deps)
    assert output == invented and len(script.seen) == 4 and _told(script) == 0
    assert not any(t == "Paris." for t in seen) and seen[-1] == invented
    policy = deps.get("citation_policy", PolicyState)
    assert policy.held_back and not policy.quote_held_back and policy.outcome == "grounded"
    quote = "Paris has been the capital since the year 987"
    assert [(q.text, q.verified, q.chunk) for q in policy.quotes] == [(quote, False, None)]


def test_a_quote_made_of_fragments_of_the_evidences_words_is_not_verified() -> None:
    # "500" and "15" are fragments of the note's "1500": a misquoted figure, not a quote of the note.
    cited = [_citation("At most 1500 requests per minute are allowed; bursts above 1500 are refused.")]
    checks = check_quotes(
        [
            "500 requests per minute are allowed",  # the figure cut at its start
            "bursts above 15",  # ... and at its end
            "at most 1500 requests per minute",  # the note's own words
        ],
        cited,
    )
    assert [c.verified for c in checks] == [False, False, True]
