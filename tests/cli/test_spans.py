"""Hits and parts of documents a reader can check: lines, `get --lines`, `get --chunk`, terminal links."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from haiku_cli.cli import output, render
from tests.capabilities.conftest import kb, kb_template
from tests.capabilities.script import cite_first, search, text
from tests.cli.scripted_model import MODEL, scripted

__all__ = ["kb", "kb_template", "scripted"]  # fixtures: `notes` and `papers` configured by name; the model

SOURCE = (
    "---\ntitle: Tides\n---\n\n"  # front matter: lines 1-3, not stored
    "# Tides\n\n"
    "The moon pulls the sea twice a day.\n"  # line 7
    "<!-- a note\nfor editors -->\n"  # lines 8-9, left out of the text but not out of its lines
    "Spring tides follow the full moon.\n\n"  # line 10
    "## Neap tides\n\n"
    "Neap tides come at the quarter moons, when the sun pulls across.\n"  # line 14
)


@pytest.fixture
def tides(cli, tmp_path: Path) -> Path:
    path = tmp_path / "tides.md"
    path.write_text(SOURCE, encoding="utf-8")
    assert cli("add-src", str(path)).exit_code == 0
    return path


def _hit(cli, query: str) -> dict:
    return json.loads(cli("search", query, "--json", "--limit", "1").stdout)["hits"][0]


def test_a_hit_names_its_source_lines_and_get_prints_exactly_them(cli, tides: Path) -> None:
    hit = _hit(cli, "neap tides quarter moons")
    assert (hit["line_start"], hit["line_end"]) == (14, 14)
    assert "lines 14" not in cli("search", "neap tides quarter moons").stdout  # one line: `line 14`
    assert "line 14" in cli("search", "neap tides quarter moons").stdout
    source = SOURCE.split("\n")
    shown = cli("get", str(tides), "--lines", "7:10")
    assert shown.exit_code == 0, shown.stderr
    # The source's lines 7-10 as stored: the comment's lines are there, empty.
    assert shown.stdout == "\n".join([source[6], "", "", source[9]]) + "\n"
    assert "lines 7-10" in shown.stderr
    part = json.loads(cli("get", str(tides), "--lines", "14", "--json").stdout)
    assert (part["line_start"], part["line_end"], part["lines_of"]) == (14, 14, "source")
    assert part["text"] == source[13]


def test_get_by_chunk_prints_the_run_the_chunk_was_cut_from(cli, tides: Path) -> None:
    hit = _hit(cli, "moon pulls the sea")
    document = json.loads(cli("get", str(tides), "--json").stdout)["document"]["content"]
    for args in (("--chunk", hit["chunk_id"]), (hit["chunk_id"],)):
        shown = cli("get", *args)
        assert shown.exit_code == 0, shown.stderr
        assert shown.stdout == document[hit["char_start"] : hit["char_end"]] + "\n"
    assert "The moon pulls the sea" in shown.stdout and "<!--" not in shown.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--lines", "9:3"), "A:B"),
        (("--lines", "x"), "A:B"),
        (("--lines", "2:3"), "holds lines 5-14"),  # front matter is not stored
        (("--lines", "900"), "holds lines 5-14"),
    ],
)
def test_a_bad_line_range_is_one_line_naming_what_to_give(cli, tides: Path, args, words) -> None:
    done = cli("get", str(tides), *args)
    assert done.exit_code != 0 and done.stdout == ""
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_unknown_chunk_is_refused_by_name(cli, tides: Path) -> None:
    done = cli("get", "--chunk", "0000-not-a-chunk")
    assert done.exit_code != 0 and "no chunk with id or id prefix '0000-not-a-chunk'" in done.stderr


def _rendered(monkeypatch: pytest.MonkeyPatch, cli, *, terminal: bool, no_color: bool) -> str:
    hits = [
        __import__("haiku_cli.api", fromlist=["SearchHit"]).SearchHit.model_validate(h)
        for h in json.loads(cli("search", "neap tides", "--json").stdout)["hits"]
    ]
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=terminal, no_color=no_color, width=200)
    monkeypatch.setattr(output, "out", console)
    render.search_hits("neap tides", hits)
    return screen.getvalue()


def test_a_hits_location_is_a_terminal_link_but_never_in_a_pipe_or_under_no_color(
    cli, tides: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    osc8 = "\x1b]8;"
    linked = _rendered(monkeypatch, cli, terminal=True, no_color=False)
    assert osc8 in linked and tides.as_uri() in linked.split(osc8, 1)[1]
    assert osc8 not in _rendered(monkeypatch, cli, terminal=True, no_color=True)
    assert osc8 not in _rendered(monkeypatch, cli, terminal=False, no_color=False)


def test_a_rebuild_keeps_each_chunks_source_lines(cli, tides: Path) -> None:
    before = _hit(cli, "neap tides quarter moons")
    assert cli("rebuild").exit_code == 0
    after = _hit(cli, "neap tides quarter moons")
    place = ("line_start", "char_start")
    assert tuple(after[k] for k in place) == tuple(before[k] for k in place) == (14, 98)


def test_an_unverified_quote_is_flagged_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    from haiku_cli.agents.question import AskResult
    from haiku_cli.capabilities.quotes import QuoteCheck

    screen = io.StringIO()
    monkeypatch.setattr(output, "err", Console(file=screen, width=200))
    quotes = [
        QuoteCheck(text="the sea is made of glass", verified=False),
        QuoteCheck(text="ok", verified=True),
    ]
    render.grounding_notice(AskResult(answer="x", grounded=True, quotes=quotes))
    assert (
        screen.getvalue()
        == 'haiku: warning: quoted passage not found in the cited chunks: "the sea is made of glass"\n'
    )


def test_a_long_unverified_quote_is_warned_about_by_its_opening_and_json_keeps_it_whole(
    kb, cli, scripted
) -> None:
    invented = (
        "Paris has been the capital of France since the year 987, when Hugh Capet made it the seat "
        "of the crown"
    )
    steps = (search("capital of France"), cite_first(), text(f'It says "{invented}" [1].'))
    scripted(*steps, steps[-1])  # told once, the model answers the same
    shown = cli("ask", "Capital of France?", *MODEL)
    assert shown.exit_code == 0, shown.stderr
    [warning] = [line for line in shown.stderr.splitlines() if "quoted passage" in line]
    assert warning == (
        'haiku: warning: quoted passage not found in the cited chunks: "Paris has been the capital of '
        'France since the year 987…"'
    )
    scripted(*steps, steps[-1])
    whole = cli("ask", "Capital of France?", *MODEL, "--json")
    assert [q["text"] for q in json.loads(whole.stdout)["quotes"]] == [invented]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("short  and\nplain", "short and plain"),
        ("x" * 80, "x" * 59 + "…"),  # no word to cut at
        ("word " * 20, "word word word word word word word word word word word…"),
    ],
)
def test_a_quote_is_shown_by_its_opening_on_one_line(text: str, shown: str) -> None:
    assert render.opening(text) == shown
