"""The real page in headless Chromium against a real `haiku serve` process, the scripted OpenAI-compatible
server standing in for the LLM: ask, follow up, reload and continue, cancel, narrow, tampering refused."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.chat_script import conversation
from tests.cli.openai_stub import Reply, answer, tool_call
from tests.support.pictures import pdf_with_images
from tests.web.browser import IN_CHROMIUM, Page
from tests.web.serving import haiku_serve

pytestmark = [*IN_CHROMIUM, pytest.mark.xdist_group("test_page")]  # one Chromium for the module


@pytest.fixture
def server(kb, openai_env) -> Iterator[tuple[str, object]]:
    """`haiku serve` over notes and papers on a free port; its URL and the scripted model server."""
    yield from serving(openai_env(conversation))


@pytest.fixture
def paper_server(kb, cli, openai_env, tmp_path: Path) -> Iterator[tuple[str, object]]:
    """The same, with a PDF holding a figure added to notes, and a model that asks about it."""
    path = tmp_path / "paper.pdf"
    path.write_bytes(pdf_with_images(PAPER, [(0, (72, 610, 120, 80), "red")]))
    added = cli("add-src", str(path), "--database", "notes")
    assert added.exit_code == 0, added.stderr
    yield from serving(openai_env(about_the_figure))


def about_the_figure(body: dict[str, object]) -> Reply:
    """Search for the figure, cite the first result shown, answer."""
    messages: list[dict[str, Any]] = body["messages"]  # type: ignore[assignment]
    # The question is the last user message holding text alone (the pictures follow in one of their own).
    asked = max(i for i, m in enumerate(messages) if m["role"] == "user" and isinstance(m["content"], str))
    step = sum(1 for m in messages[asked:] if m["role"] == "assistant")
    if step == 0:
        return tool_call("search", {"query": "recall by method figure"}, "call_search")
    if step == 1:
        return cite_first_shown(messages)
    return answer("Figure 1 shows recall by method [1].")


def cite_first_shown(messages: list[dict[str, Any]]) -> Reply:
    """Cite the first chunk id the latest tool return shows (whatever shape its content has)."""
    shown = json.dumps([m["content"] for m in messages if m["role"] == "tool"][-1])
    first = re.search(r"\[([0-9a-f-]{36})\]", shown)
    return tool_call("cite", {"chunk_ids": [first.group(1)] if first else []}, "call_cite")


@pytest.fixture
def analysis_server(kb, openai_env) -> Iterator[tuple[str, object]]:
    """`haiku serve --analysis`, with a model that runs a program before searching and citing."""
    yield from serving(openai_env(counting), "--analysis")


def counting(body: dict[str, Any]) -> Reply:
    """Load analysis, run one program, then search, cite and answer."""
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if step == 0:
        return tool_call("load_capability", {"id": "analysis"}, "call_load")
    if step == 1:
        return tool_call("execute_code", {"code": PROGRAM}, "call_exec")
    if step == 2:
        return tool_call("search", {"query": "capital of France"}, "call_search")
    if step == 3:
        return cite_first_shown(body["messages"])
    return answer("There are 4 documents; the capital of France is Paris [1].")


HOSTILE = 'Paris <img src=x onerror="document.title=1"> <script>document.title=2</script> [1].'
TOKEN = "a-long-enough-secret-token"


@pytest.fixture
def guarded_server(kb, openai_env) -> Iterator[tuple[str, object]]:
    """`haiku serve` with HAIKU_SERVE_TOKEN set, and a model whose answer holds HTML."""

    def hostile(body: dict[str, Any]) -> Reply:
        reply = conversation(body)
        return answer(HOSTILE) if reply[1]["choices"][0]["finish_reason"] == "stop" else reply

    yield from serving(openai_env(hostile), env={"HAIKU_SERVE_TOKEN": TOKEN})


INVENTED = "Paris has been the capital since the year 987"
QUOTING = f'The note says "{INVENTED}" [1], and so the story of the city goes on and on until its end.'


@pytest.fixture
def quoting_server(kb, openai_env) -> Iterator[tuple[str, object]]:
    """`haiku serve` with a model that searches, cites and answers slowly, quoting what its chunk lacks."""

    def quoting(body: dict[str, Any]) -> Reply:
        reply = conversation(body)
        return answer(QUOTING, delay=0.2) if reply[1]["choices"][0]["finish_reason"] == "stop" else reply

    yield from serving(openai_env(quoting))


def serving(stub: object, *args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, object]]:
    with haiku_serve(*args, env=env) as (url, _):
        yield url, stub


PAPER = ["Measuring recall of hybrid retrieval.\n\n\n\n\n\n\n\n\nFigure 1: Recall by method"]


PROGRAM = "print('documents:', len(list_documents()))"


def test_a_conversation_in_the_browser(server, page: Page) -> None:
    url, stub = server
    browser = page.browser
    page.open(url)
    page.ask("What is the capital of France?")
    [first] = page.answered(1)
    assert "The capital of France is Paris [1]." in first["answer"]
    assert "<strong>Paris</strong>" in first["html"]  # Markdown rendered
    assert any("France" in c and "notes" in c for c in first["citations"])
    page.shot("1-answered")

    # A citation opens its document at the cited passage.
    browser.js("document.querySelector('.citations button').click();")
    cited = browser.wait("document.querySelector('#reader .chunk.cited')?.innerText")
    assert "Paris" in cited
    page.shot("2-citation-opened")

    page.ask("How much sun does basil need?")
    turns = page.answered(2)
    assert "six hours" in turns[1]["answer"]
    assert any("Gardening" in c and "notes" in c for c in turns[1]["citations"])

    # Reload: the conversation is back exactly, and the next question continues it.
    before = page.stored()
    page.open(url)
    assert [t["answer"] for t in page.answered(2)] == [t["answer"] for t in turns]
    assert page.stored() == before
    page.ask("And what produces ATP in cells?")
    turns = page.answered(3)
    assert "ATP" in turns[2]["answer"] and any("papers" in c for c in turns[2]["citations"])
    users = [m["content"] for m in stub.requests[-1]["messages"] if m["role"] == "user"]
    assert users[0] == "What is the capital of France?" and len(users) == 3
    page.shot("3-reloaded-and-continued")

    # Cancel mid-answer: the conversation is as it was, on the page and in storage.
    stored = page.stored()
    page.ask("Tell me a slow story")
    browser.wait("document.getElementById('pending')?.innerText.includes('Once upon')")
    page.shot("4-streaming")
    browser.js("document.getElementById('cancel').click();")
    assert len(page.answered(3)) == 3
    deadline = time.monotonic() + 20
    while not stub.abandoned and time.monotonic() < deadline:  # the server stopped asking the model
        time.sleep(0.1)
    assert stub.abandoned == 1
    assert "Cancelled" in page.status()
    assert page.stored() == stored
    assert browser.js("return document.getElementById('question').value;") == "Tell me a slow story"

    # The picker narrows within the server's databases: papers unticked, the ATP question cites notes.
    browser.js("document.querySelector('#picker input[value=papers]').click();")
    assert page.stored()["databases"] == ["notes"]
    page.ask("Which organelle makes ATP?")
    turns = page.answered(4)
    assert turns[3]["citations"] and all("notes" in c for c in turns[3]["citations"])
    page.shot("5-narrowed")


def test_a_tampered_conversation_is_refused_and_nothing_changes(server, page: Page) -> None:
    url, stub = server
    browser = page.browser
    page.open(url)
    page.ask("What is the capital of France?")
    page.answered(1)

    # The stored state dropped while its history is kept: refused before the model is asked.
    browser.js(
        "const c = JSON.parse(localStorage.getItem('haiku-serve:conversation'));"
        "c.state = {}; localStorage.setItem('haiku-serve:conversation', JSON.stringify(c));"
    )
    page.open(url)
    asked = len(stub.requests)
    tampered = page.stored()
    page.ask("And its river?")
    browser.wait("document.getElementById('status').className === 'error'")
    assert "carry deps.state" in page.status()
    assert len(stub.requests) == asked and page.stored() == tampered
    page.shot("6-tampered-refused")

    # A database the server does not serve, planted in the picker's choice: named and refused.
    browser.js("document.getElementById('clear').click();")
    browser.js(
        "const c = JSON.parse(localStorage.getItem('haiku-serve:conversation'));"
        "c.databases = ['secret'];"
        "localStorage.setItem('haiku-serve:conversation', JSON.stringify(c));"
    )
    page.open(url)
    page.ask("What is the capital of France?")
    browser.wait("document.getElementById('status').className === 'error'")
    assert "secret" in page.status()

    # Clearing starts a new conversation that works.
    browser.js("document.getElementById('clear').click();")
    browser.js(
        "document.querySelector('#picker input[value=notes]').click();"
        "document.querySelector('#picker input[value=notes]').click();"
    )
    page.ask("What is the capital of France?")
    assert "Paris" in page.answered(1)[0]["answer"]


def test_a_citation_opens_its_pictures_and_page(paper_server, page: Page) -> None:
    url, _ = paper_server
    browser = page.browser
    page.open(url)
    page.ask("What does the recall figure show?")
    [turn] = page.answered(1)
    assert turn["citations"] and all("notes" in c for c in turn["citations"])
    browser.js("document.querySelector('.citations button').click();")
    # Every image the reader shows has loaded: the cited figure, the same figure where the
    # passage holds it, and the page drawn with the passage highlighted.
    sizes = "[...document.querySelectorAll(arguments[0])].map(i => [i.naturalWidth, i.naturalHeight])"
    images = "Array.from(document.querySelectorAll('#reader img'))"
    browser.wait(f"{images}.length === 3 && {images}.every(i => i.complete && i.naturalWidth > 0)")
    assert browser.js(f"return {sizes};", "#reader .pictures img.pic") == [[120, 80]]  # as stored
    assert browser.js(f"return {sizes};", "#reader .chunk img.pic") == [[120, 80]]
    [[drawn, _]] = browser.js(f"return {sizes};", "#reader img.page")
    assert drawn > 400  # the whole page, drawn
    assert "Figure 1: Recall by method" in browser.js("return document.getElementById('reader').innerText;")
    page.shot("7-pictures-and-page")


def test_analysis_programs_are_shown_folded(analysis_server, page: Page) -> None:
    url, _ = analysis_server
    browser = page.browser
    page.open(url)
    page.ask("How many documents are there, and what is the capital of France?")
    [turn] = page.answered(1)
    assert "4 documents" in turn["answer"] and turn["citations"]
    folded = browser.js(
        "const d = document.querySelector('details.program');"
        "return d && {open: d.open, code: d.querySelector('code').textContent, text: d.textContent};"
    )
    assert folded["open"] is False and folded["code"] == PROGRAM
    assert "documents: 4" in folded["text"]
    browser.js("document.querySelector('details.program summary').click();")
    page.shot("8-program-unfolded")


def test_with_a_token_the_page_asks_for_it_and_answers_are_never_html(guarded_server, page: Page) -> None:
    url, _ = guarded_server
    browser = page.browser
    browser.open(url)
    browser.wait("!document.getElementById('login').hidden")
    page.shot("9-token-asked")
    browser.js(
        "document.getElementById('token').value = arguments[0];"
        "document.getElementById('token-form').requestSubmit();",
        TOKEN,
    )
    page.ready()
    page.ask("What is the capital of France?")
    [turn] = page.answered(1)
    # The model's HTML is shown as text: no element made from it, nothing run.
    assert '<img src=x onerror="document.title=1">' in turn["answer"]
    assert "<script>document.title=2</script>" in turn["answer"]
    assert browser.js("return document.querySelectorAll('.answer img, .answer script').length;") == 0
    assert browser.js("return document.title;") == "haiku"
    # The token was kept: a reload goes straight to the conversation.
    page.open(url)
    assert len(page.answered(1)) == 1


def test_an_answer_after_a_citation_streams_live_and_an_unverified_quote_is_flagged(
    quoting_server, page: Page
) -> None:
    url, stub = quoting_server
    browser = page.browser
    page.open(url)
    page.ask("What is the capital of France?")
    # Its first words are on the page while the rest is still being written (not shown whole at the end).
    browser.wait(
        "(document.getElementById('pending')?.innerText || '').includes('The note says')"
        " && !document.getElementById('pending').innerText.includes('its end')"
    )
    page.shot("1-streaming")
    [turn] = page.answered(1)
    assert "its end" in turn["answer"]
    flagged = browser.js(
        "return Array.from(document.querySelectorAll('.turn[data-turn] .unverified')).map(p => p.innerText);"
    )
    assert len(flagged) == 1 and INVENTED in flagged[0] and "Not found in the cited passages" in flagged[0]
    assert len(stub.requests) == 3  # never sent back: the reader had seen it
    page.shot("2-flagged")
    page.open(url)  # a reload keeps the flag
    page.answered(1)
    assert browser.js("return document.querySelectorAll('.turn[data-turn] .unverified').length;") == 1
