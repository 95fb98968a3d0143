"""`haiku eval` end to end: the real CLI over a real database made from small files in the test."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from haiku_cli.errors import ExitCode
from tests.capabilities.script import call, cite_first, search, text
from tests.cli.scripted_model import MODEL, scripted

__all__ = ["scripted"]  # fixture

DOCS = {
    "tides.md": "# Tides\n\nSpring tides and neap tides follow the moon.\n",
    "owls.md": "# Owls\n\nOwls hunt mice at night in the forest.\n",
    "bread.md": "# Bread\n\nSourdough bread needs a starter, flour and water.\n",
    "volcano.md": "# Volcano\n\nLava flows from the volcano Etna in Sicily.\n",
}


@pytest.fixture
def corpus(cli, tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, body in DOCS.items():
        (folder / name).write_text(body, encoding="utf-8")
    assert cli("add-src", str(folder)).exit_code == 0
    return folder


def _questions(tmp_path: Path, corpus: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text(
        '{"id": "tides", "query": "spring neap tides", "expected": "tides.md"}\n'  # by file name
        + json.dumps({"id": "owls", "query": "owls hunt at night", "expected": str(corpus / "owls.md")})
        + "\n"  # by path
        + "sourdough starter\tbread\n"  # by stem, tab-separated: question 3
        + '{"id": "wrong", "query": "lava volcano Etna", "expected": "owls.md"}\n'
        + '{"id": "ghost", "query": "ghosts", "expected": "ghost.md"}\n'
        + '{"id": "empty", "query": " ", "expected": "tides.md"}\n',
        encoding="utf-8",
    )
    return path


def _ranked(cli, query: str) -> list[str]:
    hits = json.loads(cli("search", query, "--files", "-n", "10", "--json").stdout)["hits"]
    return [Path(h["document_uri"]).name for h in hits]


def test_scores_by_hand_and_the_questions_missed(cli, corpus: Path, tmp_path: Path) -> None:
    questions = _questions(tmp_path, corpus)
    result = cli("eval", str(questions), "--k", "1", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["questions"] == 4 and report["databases"] == ["default"] and report["k"] == 1
    # Full text finds the one document sharing the words for the first three, and nothing for the
    # fourth (owls.md shares none of its words): 3 of 4 at rank 1.
    fts = report["document"]["fts"]
    assert (fts["ndcg_10"], fts["mrr_10"], fts["recall"], fts["hits"]) == (0.75, 0.75, 0.75, 0.75)
    assert fts["missed"] == ["wrong"]
    # Hybrid ranks every document; owls.md lands where `search --files` puts it, scored by hand.
    rank = _ranked(cli, "lava volcano Etna").index("owls.md") + 1
    wrong = next(q for q in report["queries"] if q["id"] == "wrong")["document"]["hybrid"]
    assert rank > 1 and wrong["ndcg"] == pytest.approx(1 / math.log2(rank + 1))
    assert wrong["rr"] == pytest.approx(1 / rank) and wrong["hit"] is False
    # One chunk a document: the chunk level agrees with the document level.
    assert report["chunk"]["fts"] == fts
    # Each bad line named once on stderr with its place, then counted; the rest evaluated.
    err = result.stderr.splitlines()
    assert "haiku: left out questions.jsonl:5: no document 'ghost.md' in the selected databases" in err[0]
    assert err[1] == "haiku: left out questions.jsonl:6: the question is empty"
    assert err[2] == "haiku: 2 line(s) left out; 4 question(s) evaluated" and len(err) == 3
    assert report["bad_lines"][1] == "questions.jsonl:6: the question is empty"


def test_text_output_and_min_ndcg_exit_codes(cli, corpus: Path, tmp_path: Path) -> None:
    questions = _questions(tmp_path, corpus)
    shown = cli("eval", str(questions), "--k", "1", "-t", "fts")
    assert shown.exit_code == 0
    lines = shown.stdout.splitlines()
    assert lines[0] == "4 questions over default"
    assert lines[1].split() == ["level", "type", "nDCG@10", "MRR@10", "recall@1", "hits@1", "missed"]
    assert lines[2].split() == ["document", "fts", "0.7500", "0.7500", "0.7500", "0.7500", "1"]
    assert "fts missed (no expected document in the top 1): wrong" in lines
    below = cli("eval", str(questions), "-t", "fts", "--min-ndcg", "0.8")
    assert below.exit_code == ExitCode.INPUT
    assert "haiku: fts nDCG@10 (documents) is 0.7500, below --min-ndcg 0.8" in below.stderr.splitlines()
    assert below.stdout.startswith("4 questions")  # the scores are still shown
    assert cli("eval", str(questions), "-t", "fts", "--min-ndcg", "0.75").exit_code == 0


def test_nothing_left_to_evaluate_and_bad_input(cli, corpus: Path, tmp_path: Path) -> None:
    only_bad = tmp_path / "bad.jsonl"
    only_bad.write_text('{"query": "ghosts", "expected": "ghost.md"}\n', encoding="utf-8")
    result = cli("eval", str(only_bad))
    assert result.exit_code == ExitCode.INPUT and result.stdout == ""
    assert result.stderr.splitlines()[-1] == "haiku: no question could be evaluated: every one was left out"
    missing = cli("eval", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == ExitCode.INPUT and "no questions file or BEIR folder" in missing.stderr
    typed = cli("eval", str(only_bad), "--type", "fuzzy")
    assert typed.exit_code == ExitCode.INPUT and "unknown --type 'fuzzy'" in typed.stderr
    both = cli("eval", str(only_bad), "--answers", "--compare", "vector_weight=0,1")
    assert both.exit_code == ExitCode.USAGE


def test_a_beir_folder_matches_documents_by_stem(cli, corpus: Path, tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    beir.mkdir()
    (beir / "queries.jsonl").write_text(
        '{"_id": "1", "text": "owls hunt at night"}\n{"_id": "2", "text": "sourdough"}\n', encoding="utf-8"
    )
    (beir / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n1\towls\t2\n1\ttides\t1\n2\tbread\t1\n")
    report = json.loads(cli("eval", str(beir), "-t", "fts", "--json").stdout)
    assert report["questions"] == 2 and report["bad_lines"] == []
    owls = report["queries"][0]
    assert owls["relevant_documents"] == 2
    # Graded: owls.md (grade 2) first, tides.md (grade 1) not found: DCG 2 of ideal 2 + 1 / log2(3).
    assert owls["document"]["fts"]["ndcg"] == pytest.approx(2 / (2 + 1 / math.log2(3)))
    assert owls["document"]["fts"]["recall"] == 0.5


def test_compare_runs_each_setting_against_the_first(cli, corpus: Path, tmp_path: Path) -> None:
    questions = _questions(tmp_path, corpus)
    result = cli("eval", str(questions), "-t", "hybrid", "--compare", "vector_weight=0.5,1", "--json")
    assert result.exit_code == 0, result.stderr
    compared = json.loads(result.stdout)
    assert [r["label"] for r in compared["runs"]] == ["vector_weight=0.5", "vector_weight=1"]
    for d in compared["differences"]:
        base, variant = (
            {q["id"]: q[d["level"]]["hybrid"]["ndcg"] for q in run["queries"]} for run in compared["runs"]
        )
        deltas = [variant[q] - base[q] for q in base]
        assert d["delta"] == pytest.approx(sum(deltas) / 4)
        assert d["better"] == sum(x > 1e-12 for x in deltas) and d["worse"] == sum(x < -1e-12 for x in deltas)
        assert d["better"] + d["worse"] + d["same"] == d["questions"] == 4
        assert 0 < d["sign_p"] <= 1 and 0 < d["permutation_p"] <= 1
    assert [(d["level"], d["variant"]) for d in compared["differences"]] == [
        ("document", "vector_weight=1"), ("chunk", "vector_weight=1")
    ]  # fmt: skip
    text = cli("eval", str(questions), "-t", "hybrid", "--compare", "vector_weight=0.5,1").stdout
    assert "vector_weight=1 vs vector_weight=0.5" in text and "permutation p" in text
    bad = cli("eval", str(questions), "--compare", "vector_weight=0.5,2")
    assert bad.exit_code == ExitCode.INPUT and "vector_weight='2' is not a number from 0 to 1" in bad.stderr
    unknown = cli("eval", str(questions), "--compare", "chunk_size=1,2")
    assert unknown.exit_code == ExitCode.INPUT and "cannot compare 'chunk_size'" in unknown.stderr


def test_compare_a_tag_against_now(cli, corpus: Path, tmp_path: Path) -> None:
    questions = _questions(tmp_path, corpus)
    assert cli("tag", "create", "before").exit_code == 0
    (corpus / "more.md").write_text("# Tides again\n\nSpring tides, neap tides, tides.\n", encoding="utf-8")
    assert cli("add-src", str(corpus / "more.md")).exit_code == 0
    result = cli("eval", str(questions), "-t", "fts", "--compare", "at=before,now", "--json")
    assert result.exit_code == 0, result.stderr
    before, now = (json.loads(result.stdout)["runs"][i] for i in (0, 1))
    tides = [
        {q["id"]: q["document"]["fts"]["ndcg"] for q in run["queries"]}["tides"] for run in (before, now)
    ]
    assert tides[0] == 1.0 and tides[1] < 1.0  # the new document now outranks tides.md


def test_answers_cite_expected_documents_or_are_ungrounded(
    cli, corpus: Path, tmp_path: Path, scripted
) -> None:
    path = tmp_path / "asked.jsonl"
    path.write_text(
        '{"id": "owls", "query": "Where do owls hunt?", "expected": "owls.md"}\n'
        '{"id": "moon", "query": "What is on the moon?", "expected": "tides.md"}\n',
        encoding="utf-8",
    )
    script = scripted(
        search("owls hunt at night"), cite_first(), text("At night in the forest [1]."),
        search("moon craters"), call(("cite", {"chunk_ids": []})), text("The documents do not say."),
    )  # fmt: skip
    result = cli("eval", str(path), "--answers", *MODEL, "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["questions"], report["cited_expected"], report["ungrounded"]) == (2, 0.5, 0.5)
    assert [(a["id"], a["grounded"], a["cited_expected"]) for a in report["answers"]] == [
        ("owls", True, True), ("moon", False, False)
    ]  # fmt: skip
    assert len(script.seen) == 6


def test_generate_writes_a_draft_that_eval_reads(cli, corpus: Path, tmp_path: Path, scripted) -> None:
    scripted(text("Where do owls hunt?"), text("What follows the moon?"))
    draft = tmp_path / "draft.jsonl"
    result = cli("eval", str(draft), "--generate", "2", *MODEL)
    assert result.exit_code == 0, result.stderr
    assert "wrote 2 draft questions" in result.stdout and "review them" in result.stdout
    rows = [json.loads(line) for line in draft.read_text(encoding="utf-8").splitlines()]
    assert [r["query"] for r in rows] == ["Where do owls hunt?", "What follows the moon?"]
    assert all(Path(r["expected"]).parent == corpus and r["lines"] for r in rows)
    again = cli("eval", str(draft), "--generate", "2", *MODEL)
    assert again.exit_code == ExitCode.INPUT and "already exists" in again.stderr
    assert json.loads(cli("eval", str(draft), "--json").stdout)["questions"] == 2


def test_judged_lines_pick_the_relevant_chunks(cli, tmp_path: Path) -> None:
    words = ["apricot", "bramble", "chestnut", "damson", "elder", "fig", "gooseberry", "hawthorn"]
    sections = "\n\n".join(
        f"## {w.title()}\n\n" + " ".join([f"The {w} tree grows slowly."] * 40) for w in words
    )
    guide = tmp_path / "trees.md"
    guide.write_text(f"# Trees\n\n{sections}\n", encoding="utf-8")
    assert cli("add-src", str(guide)).exit_code == 0
    chunks = json.loads(cli("get", str(guide), "--json").stdout)["chunks"]
    assert len(chunks) > 2
    # The lines of the "Damson" section, and, counted independently, the chunks that overlap them.
    lines = guide.read_text(encoding="utf-8").splitlines()
    first = lines.index("## Damson") + 1
    span = (first, first + 2)
    overlapping = [c for c in chunks if c["line_start"] <= span[1] and span[0] <= c["line_end"]]
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"id": "d", "query": "damson", "expected": "trees.md", "lines": f"{span[0]}:{span[1]}"})
        + "\n"
        + json.dumps({"id": "all", "query": "damson", "expected": "trees.md"})
        + "\n",
        encoding="utf-8",
    )
    report = json.loads(cli("eval", str(questions), "-t", "fts", "--k", "100", "--json").stdout)
    judged, whole = (q["chunk"]["fts"] for q in report["queries"])
    found = json.loads(cli("search", "damson", "-t", "fts", "-n", "100", "--json").stdout)["hits"]
    relevant = {c["id"] for c in overlapping}
    assert judged["recall"] == pytest.approx(len(relevant & {h["chunk_id"] for h in found}) / len(relevant))
    assert judged["rr"] == 1.0  # the damson chunk comes first
    # Without lines every chunk of the document is relevant: recall counts all of them.
    assert whole["recall"] == pytest.approx(len(found) / len(chunks))
    assert judged["recall"] != whole["recall"] or len(relevant) == len(chunks)


def test_compare_databases_and_a_set(cli, tmp_path: Path, write_config) -> None:
    write_config(f'[databases]\nfull = "{tmp_path}/full.lancedb"\nhalf = "{tmp_path}/half.lancedb"\n')
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, body in DOCS.items():
        (folder / name).write_text(body, encoding="utf-8")
    assert cli("add-src", str(folder), "-d", "full").exit_code == 0
    assert cli("add-src", str(folder / "tides.md"), str(folder / "owls.md"), "-d", "half").exit_code == 0
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"id": "tides", "query": "spring neap tides", "expected": "tides.md"}\n'
        '{"id": "bread", "query": "sourdough starter", "expected": "bread.md"}\n',
        encoding="utf-8",
    )
    result = cli("eval", str(questions), "-t", "fts", "--compare", "database=full,half,full+half", "--json")
    assert result.exit_code == 0, result.stderr
    compared = json.loads(result.stdout)
    full, half, both = compared["runs"]
    assert (full["databases"], half["databases"], both["databases"]) == (["full"], ["half"], ["full", "half"])
    assert (full["questions"], half["questions"], both["questions"]) == (2, 1, 2)
    assert half["bad_lines"] == [
        "q.jsonl:2: no document 'bread.md' in the selected databases (by id, uri, path, file name or stem)"
    ]
    # Compared on the questions both evaluated: `half` only has tides.
    assert [d["questions"] for d in compared["differences"] if d["level"] == "document"] == [1, 2]


def test_answers_and_generate_need_a_model(cli, corpus: Path, tmp_path: Path) -> None:
    questions = _questions(tmp_path, corpus)
    asked = cli("eval", str(questions), "--answers")
    assert asked.exit_code == ExitCode.MODEL and asked.stdout == ""
    assert asked.stderr.splitlines()[-1].startswith("haiku: no language model configured")
    draft = tmp_path / "draft.jsonl"
    made = cli("eval", str(draft), "--generate", "3")
    assert made.exit_code == ExitCode.MODEL and not draft.exists()
