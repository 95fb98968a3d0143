"""Reading judged questions: a questions file and a BEIR folder; a bad line is named and the rest read."""

from __future__ import annotations

from pathlib import Path

import pytest

from haiku_cli.errors import InputError
from haiku_cli.evaluation.judgments import read_judgments


def test_a_questions_file_of_json_and_tab_separated_lines(tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text(
        "# comments and blank lines are skipped\n\n"
        '{"id": "q1", "query": "Where do owls hunt?", "expected": "owls.md", "lines": "3:5"}\n'
        '{"query": "two documents", "expected": ["a.md", "b.md"]}\n'
        "sourdough starter\tbread\t7\n"
        '{"id": "blank", "query": "  ", "expected": "a.md"}\n'
        '{"id": "nothing", "query": "no answer named"}\n'
        '{"id": "lines", "query": "q", "expected": "a.md", "lines": "9:2"}\n'
        "{broken\n",
        encoding="utf-8",
    )
    judged = read_judgments(path)
    assert [(q.id, q.text) for q in judged.questions] == [
        ("q1", "Where do owls hunt?"), ("4", "two documents"), ("5", "sourdough starter")
    ]  # fmt: skip
    assert [(e.reference, e.lines, e.where) for e in judged.questions[0].expected] == [
        ("owls.md", (3, 5), "questions.jsonl:3")
    ]
    assert [e.reference for e in judged.questions[1].expected] == ["a.md", "b.md"]
    assert judged.questions[2].expected[0].lines == (7, 7)
    bad = [str(b) for b in judged.bad_lines]
    assert bad[0] == "questions.jsonl:6: the question is empty"
    assert bad[1].startswith("questions.jsonl:7: no expected document")
    assert bad[2].startswith("questions.jsonl:8: lines '9:2' are not A:B")
    assert bad[3].startswith("questions.jsonl:9: not valid JSON") and len(bad) == 4


def test_a_beir_folder(tmp_path: Path) -> None:
    (tmp_path / "queries.jsonl").write_text(
        '{"_id": "1", "text": "owls"}\n{"_id": "2", "text": ""}\n{"_id": "3", "text": "never judged"}\n'
        '{"_id": "4", "text": "graded"}\n',
        encoding="utf-8",
    )
    (tmp_path / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n1\towls\t1\n2\ttides\t1\n9\ttides\t1\n4\ta\t2\n4\tb\t0\n4\tc\tx\n",
        encoding="utf-8",
    )
    judged = read_judgments(tmp_path)
    assert [(q.id, [(e.reference, e.grade) for e in q.expected]) for q in judged.questions] == [
        ("1", [("owls", 1.0)]), ("4", [("a", 2.0)])
    ]  # fmt: skip
    assert judged.unjudged == 1  # query 3; a judged non-relevant document (score 0) is no judgment
    assert [str(b) for b in judged.bad_lines] == [
        "queries.jsonl:2: query 2 is empty",
        "qrels.tsv:3: no query '2' in queries.jsonl",
        "qrels.tsv:4: no query '9' in queries.jsonl",
        "qrels.tsv:7: score 'x' is not a number",
    ]


def test_a_missing_or_empty_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no questions file or BEIR folder"):
        read_judgments(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="holds no questions"):
        read_judgments(tmp_path / "empty.jsonl")
    (tmp_path / "folder").mkdir()
    with pytest.raises(InputError, match="is not a BEIR folder"):
        read_judgments(tmp_path / "folder")
