"""Retrieval quality on CISI: fts, vector and hybrid, one database versus the corpus split three ways.

Builds the databases with `haiku add-src` and scores them with `haiku eval DATA --k 100 --json` (the
numbers are `haiku eval`'s: trec_eval's nDCG@10, MRR@10, recall@100). Prints a table (with --json, a JSON
object) and writes the area's table to benchmarks/results/quality.json.

    python benchmarks/retrieval_quality.py [--data ../shared/data/cisi] [--work DIR] [--json] [--weights W,W]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from common import DEFAULT_DATA, Table, haiku, load_beir, ratio, result, timed, write_corpus_files

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


def scores(config: Path, data: Path, names: list[str], *extra: str) -> dict[str, dict]:
    """`haiku eval` over the named databases: {type: {ndcg@10, recall@100, mrr@10}} at the document level."""
    args = ["eval", str(data), "--k", "100", "--json", *extra]
    for n in names:
        args += ["-d", n]
    report = json.loads(haiku(args, config).stdout)
    return {
        t: {"ndcg@10": s["ndcg_10"], "recall@100": s["recall"], "mrr@10": s["mrr_10"]}
        for t, s in report["document"].items()
    }


def quality_rows(table: Table, raw: dict[str, dict]) -> None:
    """nDCG@10 / recall@100 / MRR@10 per layout and type, split against one database, and the weights."""
    for layout, label in (("single", "one database"), ("split3", "split 3 ways")):
        for kind in TYPES:
            m, one = raw[f"{layout}/{kind}"], raw[f"single/{kind}"]
            split = layout == "split3"
            table.add(
                f"{label}, {kind}: nDCG@10 / recall@100 / MRR@10",
                f"{m['ndcg@10']:.4f} / {m['recall@100']:.4f} / {m['mrr@10']:.4f}",
                "one database, same type" if split else "",
                ratio(m["ndcg@10"], one["ndcg@10"]) if split else "",
            )
    hybrid, vector, fts = (raw[f"single/{k}"]["ndcg@10"] for k in ("hybrid", "vector", "fts"))
    table.add(
        "hybrid nDCG@10 over vector / over fts", "", "", f"{hybrid / vector:.3f}x / {hybrid / fts:.3f}x"
    )
    weights = sorted((float(k.split("=")[1]), v["ndcg@10"]) for k, v in raw.items() if "@w=" in k)
    if weights:
        table.add(
            "hybrid nDCG@10 by vector weight " + " / ".join(f"{w:g}" for w, _ in weights),
            " / ".join(f"{n:.4f}" for _, n in weights),
            f"default 0.5: {hybrid:.4f}; vector alone {vector:.4f}",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=None, help="keep databases here (reused across runs)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--weights", default="", help="also run hybrid with these vector weights, e.g. 0.3,0.5,0.7"
    )
    args = parser.parse_args()
    with result(
        "quality", f"Retrieval quality (CISI, {len(load_beir(args.data)[1])} judged queries)"
    ) as table:
        corpus, _, _ = load_beir(args.data)
        work = args.work or Path(tempfile.mkdtemp(prefix="haiku-quality-"))
        work.mkdir(parents=True, exist_ok=True)
        config = build(work, corpus)
        results: dict[str, dict] = {}
        for layout, names in (("single", ["single"]), ("split3", [f"part{i}" for i in range(SPLITS)])):
            for t, m in scores(config, args.data, names).items():
                results[f"{layout}/{t}"] = m
        for w in filter(None, args.weights.split(",")):
            weighted = work / f"config-w{w}.toml"
            weighted.write_text(config.read_text() + f"\n[search]\nvector_weight = {float(w)}\n")
            results[f"single/hybrid@w={w}"] = scores(weighted, args.data, ["single"], "-t", "hybrid")[
                "hybrid"
            ]
        quality_rows(table, results)
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
