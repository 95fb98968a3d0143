"""Retrieval quality on CISI: fts, vector and hybrid, one database versus the corpus split three ways.

Builds the databases with `haiku add-src` and queries them with `haiku search --from FILE --json`,
exactly as a script would. Prints a table and, with --json, a JSON object.

    python benchmarks/retrieval_quality.py [--data ../shared/data/cisi] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from common import DEFAULT_DATA, dedupe_documents, haiku, load_beir, metrics, timed, write_corpus_files

TYPES = ("fts", "vector", "hybrid")
SPLITS = 3


def build(work: Path, corpus: dict[str, dict]) -> Path:
    """Create `single` (whole corpus) and `part0..2` (round-robin split) databases; reuse if present."""
    config = work / "config.toml"
    names = ["single", *(f"part{i}" for i in range(SPLITS))]
    config.write_text(
        "[databases]\n" + "".join(f'{n} = "{work / (n + ".lancedb")}"\n' for n in names), encoding="utf-8"
    )
    if (work / "single.lancedb").exists():
        return config
    ids = sorted(corpus, key=int)
    write_corpus_files({i: corpus[i] for i in ids}, work / "docs" / "all")
    for p in range(SPLITS):
        write_corpus_files({i: corpus[i] for i in ids[p::SPLITS]}, work / "docs" / f"part{p}")
    _, secs = timed(lambda: haiku(["add-src", str(work / "docs" / "all"), "-d", "single"], config))
    print(f"ingested {len(ids)} documents into one database in {secs:.1f} s", file=sys.stderr)
    for p in range(SPLITS):
        haiku(["add-src", str(work / "docs" / f"part{p}"), "-d", f"part{p}"], config)
    return config


def run_queries(config: Path, queries_file: Path, search_type: str, names: list[str]) -> dict[str, list[str]]:
    """Document rankings per query id from one `haiku search --from` process."""
    args = ["search", "--from", str(queries_file), "--json", "--limit", "100", "--type", search_type]
    for n in names:
        args += ["-d", n]
    out = haiku(args, config).stdout
    ranked = {}
    for line in out.splitlines():
        row = json.loads(line)
        ranked[row["id"]] = dedupe_documents(row["hits"])
    return ranked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=None, help="keep databases here (reused across runs)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--weights", default="", help="also run hybrid with these vector weights, e.g. 0.3,0.5,0.7"
    )
    args = parser.parse_args()
    corpus, queries, qrels = load_beir(args.data)
    work = args.work or Path(tempfile.mkdtemp(prefix="haiku-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    config = build(work, corpus)
    qfile = work / "queries.jsonl"
    qfile.write_text("".join(json.dumps({"id": q, "query": t}) + "\n" for q, t in queries.items()))
    results: dict[str, dict] = {}
    for layout, names in (("single", ["single"]), ("split3", [f"part{i}" for i in range(SPLITS)])):
        for t in TYPES:
            results[f"{layout}/{t}"] = metrics(run_queries(config, qfile, t, names), qrels)
    for w in filter(None, args.weights.split(",")):
        weighted = work / f"config-w{w}.toml"
        weighted.write_text(config.read_text() + f"\n[search]\nvector_weight = {float(w)}\n")
        results[f"single/hybrid@w={w}"] = metrics(run_queries(weighted, qfile, "hybrid", ["single"]), qrels)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'layout/type':22} {'nDCG@10':>8} {'R@100':>8} {'MRR@10':>8}")
    for key, m in results.items():
        print(f"{key:22} {m['ndcg@10']:8.4f} {m['recall@100']:8.4f} {m['mrr@10']:8.4f}")
    for t in TYPES:
        s, p = results[f"single/{t}"]["ndcg@10"], results[f"split3/{t}"]["ndcg@10"]
        print(f"split/single nDCG@10 ratio, {t}: {p / s:.4f}")


if __name__ == "__main__":
    main()
