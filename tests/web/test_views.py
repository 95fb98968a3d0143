"""The page's main views in headless Chromium against a real `haiku serve`: the first view (what is in
scope, example questions), a cited document rendered from its Markdown, and a model without its key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.chat_script import conversation
from tests.cli.openai_stub import Reply, answer, tool_call
from tests.web.browser import IN_CHROMIUM, Page
from tests.web.serving import haiku_serve
from tests.web.test_page import cite_first_shown

pytestmark = [*IN_CHROMIUM, pytest.mark.xdist_group("test_views")]  # one Chromium for the module


@pytest.fixture
def with_drafts(kb, tmp_path: Path) -> None:
    """A third database configured that nothing was added to yet."""
    config = tmp_path / "config.toml"
    drafts = tmp_path / "drafts.lancedb"
    config.write_text(config.read_text(encoding="utf-8") + f'drafts = "{drafts}"\n', encoding="utf-8")


def test_the_first_view_says_what_is_in_scope_and_offers_questions(
    with_drafts, openai_env, page: Page
) -> None:
    stub = openai_env(conversation)
    browser = page.browser
    with haiku_serve() as (url, _):
        page.open(url)
        scope = browser.js(
            "return Object.fromEntries(Array.from(document.querySelectorAll('#welcome .scope li'))"
            ".map(li => [li.dataset.database, li.innerText]));"
        )
        assert scope == {
            "notes": "notes 2 documents · 2 passages",
            "papers": "papers 2 documents · 2 passages",
            "drafts": "drafts nothing added yet: left out until something is",
        }
        examples = browser.js(
            "return Array.from(document.querySelectorAll('button.example')).map(b => b.innerText);"
        )
        # Made from the titles, one from each database, and one about the whole collection.
        assert examples == [
            "What is \u201cFrance\u201d about?",
            "What are the key points of \u201cPlants\u201d?",
            "What topics do these documents cover?",
        ]
        page.shot("1-first-view")
        browser.js("document.querySelector('button.example').click();")
        assert browser.js("return document.getElementById('question').value;") == examples[0]
        assert stub.requests == []  # a click fills the box; nothing is asked until it is sent
        browser.js("document.getElementById('ask').requestSubmit();")
        [turn] = page.answered(1)
        assert "Paris" in turn["answer"]
        assert browser.js("return document.getElementById('welcome');") is None


GUIDE = "\n".join(
    [
        "# Field guide",
        "",
        *(
            f"## Chapter {n}\n\nThe weather report {n} describes rain and wind over the valley, the river "
            f"rising and the farmers waiting for the harvest of year {n}.\n"
            for n in range(1, 25)
        ),
        "## Quokkas",
        "",
        "Quokkas are small marsupials living on",
        "Rottnest island, wrapped here",
        "over several lines.",
        "",
        "- They are *nocturnal* and **herbivorous**.",
        "- They climb low trees:",
        "  1. slowly",
        "  2. carefully",
        "",
        "See [the museum](https://example.org/quokka) and [a trap](javascript:alert(1)).",
        "",
        "```python",
        "count = len(quokkas)",
        "```",
        "",
        "| island | quokkas |",
        "|---|---|",
        "| Rottnest | 10000 |",
        "",
        "<img src=x onerror=\"document.title='owned'\"> <script>document.title='owned2'</script>",
        "",
    ]
)


def about_quokkas(body: dict[str, Any]) -> Reply:
    """Search for the quokka passage, cite the first result shown, answer."""
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if step == 0:
        return tool_call("search", {"query": "quokkas small marsupials Rottnest island"}, "call_search")
    if step == 1:
        return cite_first_shown(body["messages"])
    return answer("Quokkas are *nocturnal* marsupials [1].")


@pytest.fixture
def guide_server(kb, cli, openai_env, tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "guide.md"
    path.write_text(GUIDE, encoding="utf-8")
    added = cli("add-src", str(path), "--database", "notes")
    assert added.exit_code == 0, added.stderr
    openai_env(about_quokkas)
    with haiku_serve() as (url, _):
        yield url


def test_a_cited_document_is_rendered_from_markdown_at_its_passage(guide_server: str, page: Page) -> None:
    browser = page.browser
    page.open(guide_server)
    page.ask("What are quokkas?")
    [turn] = page.answered(1)
    assert turn["citations"] and "Field guide" in turn["citations"][0]
    page.shot("2-answer-with-citations")
    browser.js("document.querySelector('.citations button').click();")
    browser.wait("document.querySelector('#reader .chunk.cited')")
    cited = "document.querySelector('#reader .chunk.cited')"
    found = browser.js(
        f"const c = {cited};"
        "const all = (s) => Array.from(c.querySelectorAll(s)).map(e => e.textContent);"
        "return {text: c.innerText, br: all('br').length, em: all('em'), strong: all('strong'),"
        " items: all('ul > li').length, nested: all('ul ol > li'), code: all('pre code'), cells: all('td'),"
        " links: [...c.querySelectorAll('a')].map(a => [a.getAttribute('href'), a.rel, a.innerText]),"
        " headings: Array.from(document.querySelectorAll('#reader .heading')).map(h => h.textContent)};"
    )
    # Lines of a paragraph flow as one; the source's line breaks are not kept as breaks.
    assert "living on Rottnest island, wrapped here over several lines." in found["text"]
    assert found["br"] == 0
    assert found["em"] == ["nocturnal"] and found["strong"] == ["herbivorous"]
    assert found["items"] == 2 and found["nested"] == ["slowly", "carefully"]
    assert found["code"] == ["count = len(quokkas)"] and found["cells"] == ["Rottnest", "10000"]
    # Only a web link becomes one; the javascript: one stays text.
    assert found["links"] == [["https://example.org/quokka", "noopener noreferrer", "the museum"]]
    assert "See the museum and a trap." in found["text"]
    # The chunk's heading (left out of its text) is shown above it; the document's own title is not repeated.
    assert found["headings"][-1] == "Quokkas" and "Field guide" not in found["headings"]
    # The document's HTML is shown as text: nothing made from it, nothing run.
    assert "<img src=x onerror=" in found["text"]
    assert browser.js("return document.querySelectorAll('#reader img, #reader script').length;") == 0
    assert browser.js("return document.title;") == "haiku"
    # The cited passage, far down the document, is scrolled into the pane's view.
    assert browser.js(
        "const r = document.getElementById('reader');"
        f"const box = r.getBoundingClientRect(), c = {cited}.getBoundingClientRect();"
        "return r.scrollTop > 0 && c.top >= box.top && c.bottom <= box.bottom;"
    )
    page.shot("3-document-open")


def test_a_missing_model_key_is_said_on_the_first_question(kb, page: Page) -> None:
    browser = page.browser
    with haiku_serve() as (url, process):  # openai-chat:test, and no OPENAI_API_KEY
        page.open(url)
        assert browser.js("return document.querySelectorAll('#welcome .scope li').length;") == 2
        for asked in range(2):  # said again on the next question: the server is still there
            page.ask("What is the capital of France?")
            browser.wait("document.getElementById('status').className === 'error'")
            if not asked:
                page.shot("4-model-key-missing")
            said = page.status()
            assert "set the OPENAI_API_KEY environment variable" in said and "restart haiku serve" in said
            assert browser.js("return document.getElementById('question').value;") == (
                "What is the capital of France?"
            )
            assert process.poll() is None
            browser.js("document.getElementById('status').className = '';")
        assert page.browser.js("return localStorage.getItem('haiku-serve:conversation');") is None
