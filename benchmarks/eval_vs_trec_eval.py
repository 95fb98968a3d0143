"""`haiku eval`'s document-level scores against trec_eval's (pytrec_eval) on the same rankings.

Runs `haiku eval DATA --k 100 --json` and, for each search type, `haiku search --from --files --json
--limit 100` for the rankings, scores those with pytrec_eval (`pip install pytrec-eval-terrier`; it is
not a dependency of haiku) and prints the largest per-query difference of nDCG@10, MRR@10, recall@100 and
hits@100. Needs a config whose databases hold the corpus as files named by corpus id (`12.md`), as
retrieval_quality.py builds them.

    python benchmarks/eval_vs_trec_eval.py --config /tmp/haiku-quality/config.toml -d single [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import pytrec_eval
from common import DEFAULT_DATA, haiku, load_beir

TYPES = ("fts", "vector", "hybrid")


def rankings(config: Path, queries: dict[str, str], kind: str, names: list[str]) -> dict[str, list[str]]:
    """Corpus ids (file stems) per query, best first, 100 documents deep."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("".join(json.dumps({"id": q, "query": t}) + "\n" for q, t in queries.items()))
    args = ["search", "--from", f.name, "--files", "--json", "--limit", "100", "--type", kind]
    for n in names:
        args += ["-d", n]
    out = haiku(args, config).stdout.splitlines()
    Path(f.name).unlink()
    rows = [json.loads(line) for line in out]
    return {r["id"]: [Path(h["document_uri"]).stem for h in r["hits"]] for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("-d", "--database", action="append", default=[])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    _, queries, relevant = load_beir(args.data)
    qrels = {q: dict.fromkeys(docs, 1) for q, docs in relevant.items()}
    report = json.loads(
        haiku(
            ["eval", str(args.data), "--k", "100", "--json", *[a for n in args.database for a in ("-d", n)]],
            args.config,
        ).stdout
    )
    ours = {q["id"]: q["document"] for q in report["queries"]}
    result: dict[str, float] = {}
    for kind in TYPES:
        ranked = rankings(args.config, queries, kind, args.database)
        run = {q: {d: 1000.0 - i for i, d in enumerate(docs)} for q, docs in ranked.items()}
        top10 = {q: {d: 1000.0 - i for i, d in enumerate(docs[:10])} for q, docs in ranked.items()}
        full = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "success.100"}).evaluate(
            run
        )
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
        worst = 0.0
        for q in qrels:
            mine = ours[q][kind]
            pairs = [
                (mine["ndcg"], full[q]["ndcg_cut_10"]),
                (mine["rr"], rr[q]["recip_rank"]),
                (mine["recall"], full[q]["recall_100"]),
                (float(mine["hit"]), full[q]["success_100"]),
            ]
            worst = max(worst, *(abs(a - b) for a, b in pairs))
        result[kind] = worst
    print(json.dumps({"queries": len(qrels), "largest_difference": result}, indent=2))


if __name__ == "__main__":
    main()
