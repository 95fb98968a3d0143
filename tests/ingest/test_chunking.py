"""Structure-aware chunking."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from haiku_cli.ingest.chunking import COUNT_WINDOW, Chunk, chunk_document
from haiku_cli.ingest.document import ConvertedDocument, Segment

from .helpers import words


def doc(*texts: str, pages: bool = False) -> ConvertedDocument:
    return ConvertedDocument("", None, [Segment(t, i + 1 if pages else None) for i, t in enumerate(texts)])


def sentence(n: int, length: int = 12) -> str:
    return " ".join(f"s{n}w{i}" for i in range(length - 1)) + f" end{n}."


def check(chunks: list[Chunk], counter=words, max_tokens: int = 256) -> None:
    assert [c.order for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.text == c.text.strip() and c.text
        assert counter(c.text) <= max_tokens


def test_heading_paths() -> None:
    text = (
        "Preamble.\n\n# Install\n\nGeneral.\n\n## On Linux\n\nUse apt.\n\n### Debian\n\nDeb.\n\n"
        "## On macOS\n\nUse brew.\n\n# Usage #\n\nRun it.\n\nOther\n-----\n\nSetext child."
    )
    chunks = chunk_document(doc(text), words)
    check(chunks)
    assert [(c.heading_path, c.text) for c in chunks] == [
        ([], "Preamble."),
        (["Install"], "General."),
        (["Install", "On Linux"], "Use apt."),
        (["Install", "On Linux", "Debian"], "Deb."),
        (["Install", "On macOS"], "Use brew."),
        (["Usage"], "Run it."),
        (["Usage", "Other"], "Setext child."),
    ]
    assert all(c.pages == [] for c in chunks)


def test_rst_titles() -> None:
    text = "=====\nGuide\n=====\n\nIntro.\n\nPart\n~~~~\n\nBody.\n\nNext\n====\n\nMore."
    chunks = chunk_document(doc(text), words)
    assert [(c.heading_path, c.text) for c in chunks] == [
        (["Guide"], "Intro."),
        (["Guide", "Part"], "Body."),
        (["Next"], "More."),
    ]


def test_hash_inside_code_is_not_a_heading() -> None:
    text = "# Real\n\n```bash\n# a comment\necho hi\n```\n\nafter"
    chunks = chunk_document(doc(text), words)
    assert [c.heading_path for c in chunks] == [["Real"]]
    assert chunks[0].text == "```bash\n# a comment\necho hi\n```\n\nafter"


def test_paragraphs_are_packed_up_to_the_budget() -> None:
    paragraphs = [sentence(i, 20) for i in range(30)]  # 600 words
    chunks = chunk_document(doc("\n\n".join(paragraphs)), words, max_tokens=100, overlap_tokens=0)
    check(chunks, max_tokens=100)
    # 90% of 100 leaves room for four 20-word paragraphs per chunk, never cut.
    assert [c.text.count("\n\n") + 1 for c in chunks] == [4] * 7 + [2]
    assert "\n\n".join(c.text for c in chunks) == "\n\n".join(paragraphs)


def test_long_paragraph_is_cut_at_sentences_with_overlap() -> None:
    paragraph = " ".join(sentence(i, 10) for i in range(40))  # 400 words, 40 sentences
    chunks = chunk_document(doc(paragraph), words, max_tokens=100, overlap_tokens=20)
    check(chunks, max_tokens=100)
    assert len(chunks) > 4
    for c in chunks:
        assert c.text.endswith(".")  # cut between sentences only
        assert c.text.split()[0].startswith("s")
    for prev, nxt in itertools.pairwise(chunks):
        first = nxt.text.split(". ")[0] + "."
        assert prev.text.endswith(first) or f"{first} " in prev.text, "pieces overlap by whole sentences"
        shared = set(prev.text.split()) & set(nxt.text.split())
        assert 0 < len(shared) <= 20  # a modest overlap: at most overlap_tokens
    covered = " ".join(c.text for c in chunks)
    assert all(f"end{i}." in covered for i in range(40))


def test_no_overlap_between_separate_paragraphs() -> None:
    text = "\n\n".join(sentence(i, 50) for i in range(4))
    chunks = chunk_document(doc(text), words, max_tokens=60, overlap_tokens=20)
    assert [c.text for c in chunks] == [sentence(i, 50) for i in range(4)]


def test_run_without_sentences_is_cut_at_lines_then_words() -> None:
    csv = "\n".join(f"{i},value {i},more text here" for i in range(200))
    chunks = chunk_document(doc(csv), words, max_tokens=50, overlap_tokens=0)
    check(chunks, max_tokens=50)
    for c in chunks:
        assert all(line.count(",") == 2 for line in c.text.split("\n"))  # whole lines only
    assert "\n".join(c.text for c in chunks) == csv

    one_line = " ".join(f"word{i}" for i in range(1000))
    chunks = chunk_document(doc(one_line), words, max_tokens=50, overlap_tokens=5)
    check(chunks, max_tokens=50)
    seen = {w for c in chunks for w in c.text.split()}
    assert seen == set(one_line.split())  # never a word cut in two


def test_giant_word_is_cut_by_characters() -> None:
    blob = "x" * 5000

    def chars(text: str) -> int:
        return math.ceil(len(text) / 10)

    chunks = chunk_document(doc(f"before\n\n{blob}\n\nafter"), chars, max_tokens=100)
    check(chunks, counter=chars, max_tokens=100)
    joined = "".join(c.text for c in chunks)
    assert joined.startswith("before") and joined.endswith("after")
    assert joined.removeprefix("before").removesuffix("after").replace("\n", "") == blob


def test_tables_and_code_stay_whole_when_they_fit() -> None:
    table = "| a | b |\n| --- | --- |\n" + "\n".join(f"| r{i} | v{i} |" for i in range(10))
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(10)) + "\n```"
    filler = sentence(0, 60)
    text = f"{filler}\n\n{table}\n\n{filler}\n\n{code}"
    chunks = chunk_document(doc(text), words, max_tokens=100, overlap_tokens=0)
    check(chunks, max_tokens=100)
    assert any(c.text.endswith(table) or c.text.startswith(table) for c in chunks)
    assert any(code in c.text for c in chunks)


def test_long_table_repeats_its_header() -> None:
    rows = [f"| row {i} | value {i} |" for i in range(100)]
    table = "| name | value |\n| --- | --- |\n" + "\n".join(rows)
    chunks = chunk_document(doc(table), words, max_tokens=60, overlap_tokens=0)
    check(chunks, max_tokens=60)
    assert len(chunks) > 3
    for c in chunks:
        assert c.text.startswith("| name | value |\n| --- | --- |\n| row ")
    body = [line for c in chunks for line in c.text.split("\n")[2:]]
    assert body == rows


def test_pages_flow_and_are_recorded() -> None:
    chunks = chunk_document(doc("one.", "two.", "", "four.", pages=True), words)
    assert [(c.text, c.pages) for c in chunks] == [("one.\n\ntwo.\n\nfour.", [1, 2, 4])]


def test_only_headings_are_still_indexed() -> None:
    chunks = chunk_document(doc("# Title\n\n## Sub"), words)
    assert [(c.text, c.heading_path) for c in chunks] == [("# Title\n\n## Sub", [])]


def test_empty_document_has_no_chunks() -> None:
    assert chunk_document(doc("", "  "), words) == []


def test_special_tokens_and_fractional_counts() -> None:
    def bert_like(text: str) -> int:
        return len(text.split()) + 2  # [CLS] and [SEP]

    def fractional(text: str) -> float:
        return len(text.split()) * 1.3

    text = "\n\n".join(" ".join(sentence(i, 15) for i in range(j, j + 3)) for j in range(0, 90, 3))
    for counter in (bert_like, fractional):
        chunks = chunk_document(doc(text), counter, max_tokens=64, overlap_tokens=8)
        check(chunks, counter=counter, max_tokens=64)


def test_budget_holds_on_random_markdown() -> None:
    rng = random.Random(7)
    vocab = ["alpha", "beta", "gamma.", "delta,", "epsilon", "zeta!", "eta", "theta?"]
    parts = []
    for _ in range(300):
        roll = rng.random()
        if roll < 0.1:
            parts.append("#" * rng.randint(1, 4) + " " + rng.choice(vocab).strip(".,!?"))
        elif roll < 0.15:
            parts.append(
                "```\n"
                + "\n".join(" ".join(rng.choices(vocab, k=8)) for _ in range(rng.randint(1, 60)))
                + "\n```"
            )
        elif roll < 0.2:
            parts.append("\n".join(f"| {rng.choice(vocab)} | {i} |" for i in range(rng.randint(2, 80))))
        else:
            parts.append(" ".join(rng.choices(vocab, k=rng.randint(1, 400))))
    for max_tokens in (32, 128, 512):
        chunks = chunk_document(doc("\n\n".join(parts)), words, max_tokens=max_tokens)
        check(chunks, max_tokens=max_tokens)


def test_counter_is_called_on_pieces_not_growing_text() -> None:
    calls: list[int] = []

    def counting(text: str) -> int:
        calls.append(len(text))
        return len(text.split())

    paragraphs = [sentence(i, 30) for i in range(2000)]  # 60k words
    text = "\n\n".join(paragraphs)
    chunks = chunk_document(doc(text), counting, max_tokens=256)
    check(chunks)
    # One count per paragraph, one check per finished chunk, two probes for the separator cost: the work
    # grows with the text, never with the text times its chunks (how long it takes is benchmarks' to say).
    assert len(calls) <= len(paragraphs) + len(chunks) + 2
    assert max(calls) <= 256 * 8
    assert sum(calls) <= 3 * len(text)


ONE_LINE = {
    "punctuation without spaces": "." * 400_000,
    "alternating stops": "!?" * 200_000,
    "dotted words": "a.b" * 130_000,
    "plain words": " ".join(f"w{i % 97}" for i in range(100_000)),
    "one long word": "x" * 400_000,
    "table rule of blanks": "| a | b |\n" + " " * 400_000 + "x\n| 1 | 2 |\n| 3 | 4 |",
}


@pytest.mark.timeout(120)  # generous: the sentence cut was quadratic, 80,000 dots took minutes
@pytest.mark.parametrize("shape", ONE_LINE)
def test_one_line_inputs_cost_work_in_proportion_to_their_size(shape: str) -> None:
    text = ONE_LINE[shape]
    counted: list[int] = []

    def chars(piece: str) -> int:
        counted.append(len(piece))
        return math.ceil(len(piece) / 8)

    chunks = chunk_document(doc(text), chars, max_tokens=256)
    check(chunks, counter=chars)
    # Each character is tokenized a bounded number of times (the whole, its pieces, their overlap).
    assert sum(counted) <= 4 * len(text)
    # And never the whole line at once: a tokenizer holds hundreds of bytes per token while it encodes
    # (2 MB of '.' at once peaked at 1.3 GB with the bundled one).
    assert max(counted) <= COUNT_WINDOW


def test_a_word_the_tokenizer_reads_as_one_token_is_still_cut() -> None:
    # WordPiece reads any word over 100 characters as one [UNK]: a 400 KB word was one 400 KB chunk.
    chunks = chunk_document(doc("x" * 400_000), lambda text: 3 if text else 2, max_tokens=256)
    assert "".join(c.text for c in chunks) == "x" * 400_000
    assert max(len(c.text) for c in chunks) <= 256 * 32


def test_tiny_budget_is_rejected() -> None:
    with pytest.raises(ValueError):
        chunk_document(doc("text"), lambda t: len(t.split()) + 5, max_tokens=4)


def test_attribute_lists_leave_titles_and_heading_paths() -> None:
    from haiku_cli.ingest.convert.markdown import convert_markdown

    text = (
        "# Handling Errors { #handling-errors }\n\nIntro.\n\n"
        "## Use HTTPException {.tip data-x=1}\n\nRaise it."
    )
    converted = convert_markdown(text, uri="", fallback_title=None)
    assert converted.title == "Handling Errors"
    assert [c.heading_path for c in chunk_document(converted, words)] == [
        ["Handling Errors"],
        ["Handling Errors", "Use HTTPException"],
    ]
    # A brace that is part of the words stays.
    assert chunk_document(doc("# The {} literal\n\nText."), words)[0].heading_path == ["The {} literal"]


def test_markup_only_blocks_and_include_directives_are_not_chunks() -> None:
    from haiku_cli.ingest.convert.markdown import convert_markdown

    text = (
        '# Guessing Game\n\n<a id="setting-up"></a>\n\n<!-- TODO: a longer\n\ncomment -->\n\n'
        "Let us set up a project <!-- inline note --> first.\n\n"
        "```rust\n{{#rustdoc_include ../listings/ch02/src/main.rs:print}}\n```\n\n"
        "{* ../../docs_src/handling_errors/tutorial001.py hl[1] *}\n\n"
        '```html\n<!-- a comment shown as code -->\n```\n\n<img src="x.png">\n'
    )
    converted = convert_markdown(text, uri="", fallback_title=None)
    assert "rustdoc_include" not in converted.text and "tutorial001" not in converted.text
    assert [c.text for c in chunk_document(converted, words)] == [
        "Let us set up a project  first.\n\n```html\n<!-- a comment shown as code -->\n```"
    ]


def test_a_long_code_block_is_fenced_again_in_every_chunk() -> None:
    body = "\n".join(f"x{i} = compute(value_{i}, other_{i})  # step {i}" for i in range(60))
    chunks = chunk_document(doc(f"# Code\n\n~~~python\n{body}\n~~~"), words, max_tokens=100)
    check(chunks, max_tokens=100)
    assert len(chunks) > 3
    for c in chunks:
        lines = c.text.split("\n")
        assert lines[0] == "~~~python" and lines[-1] == "~~~" and lines[1].startswith("x")
    assert {line for c in chunks for line in c.text.split("\n")[1:-1]} == set(body.split("\n"))


def test_a_cut_by_words_never_splits_a_link() -> None:
    links = " ".join(
        f"see [the guide to handling errors number {i}](https://example.org/errors/{i}) now"
        for i in range(40)
    )
    chunks = chunk_document(doc(links), words, max_tokens=45, overlap_tokens=0)  # 40 words: not 9 * n
    check(chunks, max_tokens=45)
    assert len(chunks) > 3
    for c in chunks:
        assert c.text.count("[") == c.text.count("](") == c.text.count(")")


def test_snippet_and_rst_include_directives_are_not_text() -> None:
    from haiku_cli.ingest.convert.markdown import convert_markdown

    text = (
        'Intro text.\n\n--8<-- "docs/snippets/setup.md"\n\n'
        ".. literalinclude:: ../src/app.py\n   :language: python\n   :lines: 1-20\n\nOutro text."
    )
    converted = convert_markdown(text, uri="", fallback_title=None)
    assert [c.text for c in chunk_document(converted, words)] == ["Intro text.\n\nOutro text."]
