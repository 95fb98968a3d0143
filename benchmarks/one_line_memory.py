"""Peak memory and CPU time of chunking one-line inputs with the bundled tokenizer counting tokens.

Each case runs in a fresh process: load the bundled tokenizer, then `chunk_document` on one line of
'.' (a token per character), or of words, of the given size. It prints the resident set size before
chunking and the peak after, the CPU seconds of the chunking, and the chunk count:

    python benchmarks/one_line_memory.py [--mb 0.5,2] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

SHAPES = ("dots", "words")


def _case(shape: str, mb: float) -> dict:
    """Run in the child: one chunking, measured."""
    from haiku_cli.embed import _bundle
    from haiku_cli.ingest.chunking import chunk_document
    from haiku_cli.ingest.document import ConvertedDocument, Segment

    size = int(mb * 2**20)
    text = "." * size if shape == "dots" else " ".join(f"w{i % 997}" for i in range(size // 5))[:size]
    _bundle.count_tokens("warm up")  # the tokenizer loaded before measuring
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    cpu = time.process_time()
    chunks = chunk_document(
        ConvertedDocument(uri="", title="t", segments=[Segment(text)]), _bundle.count_tokens
    )
    return {
        "shape": shape,
        "mb": mb,
        "chunks": len(chunks),
        "rss_before_mb": before,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "cpu_seconds": round(time.process_time() - cpu, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", default="0.5,2", help="sizes in MB, comma-separated")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_case(args.child[0], float(args.child[1]))))
        return
    rows = []
    for mb in (float(m) for m in args.mb.split(",")):
        for shape in SHAPES:
            out = subprocess.run(
                [sys.executable, __file__, "--child", shape, str(mb)],
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append(json.loads(out.stdout))
            if not args.json:
                r = rows[-1]
                print(
                    f"{r['shape']:>5} {r['mb']:>4} MB: {r['chunks']:>6} chunks, peak {r['peak_rss_mb']} MB "
                    f"(from {r['rss_before_mb']} MB), {r['cpu_seconds']} CPU-s"
                )
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
