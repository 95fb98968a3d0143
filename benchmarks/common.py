"""Shared benchmark plumbing: the CISI data, building databases with `haiku add-src`, running `haiku`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "cisi"
T = TypeVar("T")


def load_beir(data: Path) -> tuple[dict[str, dict], dict[str, str], dict[str, set[str]]]:
    """Corpus {id: {title, text}}, queries {id: text} and qrels {query id: relevant doc ids}."""
    corpus = {}
    for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        corpus[row["_id"]] = {"title": row.get("title", ""), "text": row["text"]}
    queries = {}
    for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        queries[row["_id"]] = row["text"]
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in (data / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, score = line.split("\t")
        if float(score) > 0:
            qrels[qid].add(did)
    return corpus, {q: t for q, t in queries.items() if q in qrels}, dict(qrels)


def write_corpus_files(corpus: dict[str, dict], folder: Path) -> None:
    """One Markdown file per document, named by its corpus id (so results map back by uri)."""
    folder.mkdir(parents=True, exist_ok=True)
    for did, doc in corpus.items():
        (folder / f"{did}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")


def haiku(args: list[str], config: Path, *, check: bool = True) -> subprocess.CompletedProcess:
    """Run the haiku CLI in a subprocess with a given config file."""
    env = {**os.environ, "HAIKU_CONFIG": str(config)}
    return subprocess.run(
        [sys.executable, "-m", "haiku_cli", *args], env=env, capture_output=True, text=True, check=check
    )


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """(result, seconds) of a call."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start
