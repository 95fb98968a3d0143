"""Judged questions read from a file: a BEIR folder (queries.jsonl + qrels.tsv) or a questions file.

A questions file holds one question a line, as JSON `{"id", "query", "expected", "lines"}` (`expected`: a
document's path, uri or id, or a list of them; `lines`: "A:B", the lines of it that answer) or as
tab-separated `question<TAB>expected[<TAB>A:B]`; blank lines and lines starting with `#` are skipped. A bad
line is kept as a `BadLine` (one line of text, its place first) and the rest is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from haiku_cli.errors import InputError

QUERIES = "queries.jsonl"
QRELS = ("qrels.tsv", "qrels/test.tsv")


@dataclass(frozen=True)
class Expected:
    """A document judged relevant to a question, as the file names it, and where the file names it."""

    reference: str
    where: str
    grade: float = 1.0
    lines: tuple[int, int] | None = None  # the document's lines that answer, when the file says


@dataclass
class Question:
    """One judged question."""

    id: str
    text: str
    expected: list[Expected] = field(default_factory=list)


@dataclass(frozen=True)
class BadLine:
    """A line left out of the evaluation, and why."""

    where: str
    problem: str

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}"


@dataclass
class Judgments:
    """What a QRELS file or folder holds: the questions with a judgment, the lines left out, and how many
    questions had no relevant judgment (BEIR's queries.jsonl may list more queries than were judged)."""

    questions: list[Question]
    bad_lines: list[BadLine]
    unjudged: int = 0
    base: Path = Path(".")  # where relative paths in the file are read from


def read_judgments(path: Path) -> Judgments:
    """The judged questions at `path` (a BEIR folder or a questions file)."""
    if path.is_dir():
        return _read_beir(path)
    if not path.is_file():
        raise InputError(
            f"no questions file or BEIR folder at {path}; give a folder holding {QUERIES} and "
            "qrels.tsv, or a file of questions (haiku help eval)"
        )
    judgments = _read_questions(path)
    if not judgments.questions and not judgments.bad_lines:
        raise InputError(f"{path} holds no questions; `haiku help eval` shows the format")
    return judgments


def _lines(path: Path) -> list[tuple[str, str]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from exc
    return [(f"{path.name}:{n}", line.strip()) for n, line in enumerate(text.splitlines(), 1)]


def parse_lines(value: str) -> tuple[int, int]:
    """'A:B' (or 'A') as 1-based first and last lines."""
    first, _, last = value.partition(":")
    try:
        a, b = int(first), int(last or first)
    except ValueError:
        raise ValueError(f"lines {value!r} are not A:B (e.g. 12:30)") from None
    if a < 1 or b < a:
        raise ValueError(f"lines {value!r} are not A:B with 1 <= A <= B")
    return a, b


def _read_questions(path: Path) -> Judgments:
    questions: list[Question] = []
    bad: list[BadLine] = []
    for n, (where, line) in enumerate(_lines(path), 1):
        if not line or line.startswith("#"):
            continue
        try:
            qid, text, refs, lines = (
                _json_question(line, n) if line.startswith("{") else _tsv_question(line, n)
            )
            span = parse_lines(lines) if lines else None
        except ValueError as exc:
            bad.append(BadLine(where, str(exc)))
            continue
        if not text.strip():
            bad.append(BadLine(where, "the question is empty"))
        elif not refs:
            bad.append(BadLine(where, "no expected document; give its path, uri or id"))
        else:
            questions.append(Question(qid, text, [Expected(r, where, lines=span) for r in refs]))
    return Judgments(questions, bad, base=path.parent)


def _json_question(line: str, n: int) -> tuple[str, str, list[str], str | None]:
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise ValueError('expected a JSON object {"query": ..., "expected": ...}')
    text = obj.get("query", obj.get("question", ""))
    expected = obj.get("expected", [])
    refs = [expected] if isinstance(expected, str) else expected
    if not isinstance(text, str) or not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise ValueError("'query' must be text and 'expected' text or a list of texts")
    lines = obj.get("lines")
    return str(obj.get("id", n)), text, [r for r in refs if r.strip()], None if lines is None else str(lines)


def _tsv_question(line: str, n: int) -> tuple[str, str, list[str], str | None]:
    parts = [p.strip() for p in line.split("\t")]
    text, refs, lines = parts[0], parts[1:2], parts[2] if len(parts) > 2 else None
    return str(n), text, [r for r in refs if r], lines or None


def _read_beir(folder: Path) -> Judgments:
    qrels = next((folder / name for name in QRELS if (folder / name).is_file()), None)
    if not (folder / QUERIES).is_file() or qrels is None:
        raise InputError(
            f"{folder} is not a BEIR folder: it needs {QUERIES} and qrels.tsv (or qrels/test.tsv)"
        )
    bad: list[BadLine] = []
    questions: dict[str, Question] = {}
    for where, line in _lines(folder / QUERIES):
        if not line:
            continue
        try:
            row = json.loads(line)
            qid, text = str(row["_id"]), row["text"]
        except (ValueError, KeyError, TypeError):
            bad.append(BadLine(where, 'expected JSON {"_id": ..., "text": ...}'))
            continue
        if not isinstance(text, str) or not text.strip():
            bad.append(BadLine(where, f"query {qid} is empty"))
        else:
            questions[qid] = Question(qid, text)
    _read_qrels(qrels, questions, bad)
    judged = [q for q in questions.values() if q.expected]
    return Judgments(judged, bad, unjudged=len(questions) - len(judged), base=folder)


def _read_qrels(path: Path, questions: dict[str, Question], bad: list[BadLine]) -> None:
    for n, (where, line) in enumerate(_lines(path), 1):
        parts = line.split()
        if not parts or (n == 1 and parts[0] == "query-id"):
            continue
        if len(parts) not in (3, 4):  # BEIR's `query corpus score`, or TREC's `query 0 doc grade`
            bad.append(BadLine(where, "expected query-id<TAB>corpus-id<TAB>score"))
            continue
        qid, ref, grade_text = parts[0], parts[-2], parts[-1]
        try:
            grade = float(grade_text)
        except ValueError:
            bad.append(BadLine(where, f"score {grade_text!r} is not a number"))
            continue
        if qid not in questions:
            bad.append(BadLine(where, f"no query {qid!r} in {QUERIES}"))
        elif grade > 0:  # a judged non-relevant document adds nothing to these measures
            questions[qid].expected.append(Expected(ref, where, grade))


def in_file_order(lines: list[BadLine]) -> list[str]:
    """Bad lines as text, by file and line number: the order a user reads the file in."""

    def place(line: BadLine) -> tuple[str, int]:
        name, _, number = line.where.rpartition(":")
        return name, int(number) if number.isdigit() else 0

    return [str(b) for b in sorted(lines, key=place)]
