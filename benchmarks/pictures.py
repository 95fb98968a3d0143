"""Pictures: what storing them costs at ingest, and what sending them costs a 10-turn conversation.

1. Ingest: `haiku add-src` of the real PDFs in ../shared/data/pdfs (see its README) into a fresh database,
   with pictures (the defaults) and without (`[ingest] max_pictures = 0`): pages per second and stored
   bytes per page (the database folder after the add).
2. Requests: a scripted 10-question conversation over that database with pictures, each question made
   from a chunk that covers a picture, searching once, citing the first two hits and answering, held
   without and with `EvidenceCompaction`. The model is a pydantic-ai FunctionModel (it takes images), so
   the figures are what a vision model would be sent: text characters and image bytes per request.

    python benchmarks/pictures.py [--pdfs ../shared/data/pdfs] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from common import DEFAULT_PDFS, Table, haiku, ratio, result, timed
from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from haiku_cli.capabilities import CitationPolicy, EvidenceCompaction, HaikuDeps, RetrievalCapability
from haiku_cli.databases.workspace import Workspace
from haiku_cli.store import open_database, reads
from haiku_cli.store.blocking import wait
from haiku_cli.store.location import Location
from haiku_cli.store.markers import MARKER

QUESTIONS = 10
CHUNK_ID = re.compile(r"\[([0-9a-f-]{36})\]")


def pages_of(folder: Path) -> int:
    """Pages of the PDFs in `folder` that PDFium opens (the unreadable ones add nothing)."""
    import pypdfium2 as pdfium

    total = 0
    for path in sorted(folder.glob("*.pdf")):
        try:
            pdf = pdfium.PdfDocument(path)
        except pdfium.PdfiumError:
            continue
        total += len(pdf)
        pdf.close()
    return total


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def ingest(work: Path, pdfs: Path, *, pictures: bool) -> tuple[Path, dict[str, float]]:
    """Add the PDFs to a fresh database; its config, and the add's pages/s and stored bytes per page."""
    name = "with" if pictures else "without"
    config = work / f"{name}.toml"
    db = work / f"{name}.lancedb"
    config.write_text(
        f'[databases]\npdfs = "{db}"\n' + ("" if pictures else "\n[ingest]\nmax_pictures = 0\n"),
        encoding="utf-8",
    )
    result, secs = timed(lambda: haiku(["add-src", str(pdfs), "--json"], config, check=False))
    if not result.stdout.strip():
        sys.exit(f"haiku add-src failed: {result.stderr.strip()}")
    outcomes = json.loads(result.stdout)["outcomes"]
    added = sum(o["status"] == "added" for o in outcomes)
    pages = pages_of(pdfs)
    handle = open_database(Location("pdfs", str(db)))
    stored = handle.pictures.count_rows() if handle.pictures is not None else 0
    size = folder_size(db)
    return config, {
        "documents_added": added,
        "pages": pages,
        "seconds": round(secs, 2),
        "pages_per_second": round(pages / secs, 2),
        "pictures": stored,
        "stored_bytes": size,
        "bytes_per_page": round(size / pages),
    }


def questions_with_pictures(config: Path) -> list[str]:
    """Questions made from the first words of chunks that cover a picture (one per document first)."""
    ws = Workspace.load(config)
    db = open_database(ws.select_one(["pdfs"]))
    chunks = []
    for doc in wait(reads.list_documents(db, limit=None)):
        for chunk in wait(reads.chunks_of(db, doc.id)):
            words = MARKER.sub(" ", chunk.text).split()
            if MARKER.search(chunk.text) and len(words) >= 6:
                chunks.append((doc.id, " ".join(words[:14])))
    firsts = list({d: q for d, q in reversed(chunks)}.values())
    rest = [q for _, q in chunks if q not in firsts]
    return (firsts + rest)[:QUESTIONS]


class Asker:
    """The scripted model: per question, one search, a citation of the first two hits, an answer."""

    def __init__(self) -> None:
        self.question = ""
        self.requests: list[list[dict[str, int]]] = []

    def begin(self, question: str) -> None:
        self.question = question
        self.requests.append([])

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests[-1].append(measure(messages, info.instructions))
        step = len(self.requests[-1])
        if step == 1:
            return ModelResponse(parts=[ToolCallPart("search", {"query": self.question})])
        if step == 2:
            last = messages[-1]
            assert isinstance(last, ModelRequest)
            shown = [p for p in last.parts if isinstance(p, ToolReturnPart) and p.tool_name == "search"]
            ids = CHUNK_ID.findall(shown[-1].model_response_str()) if shown else []
            return ModelResponse(parts=[ToolCallPart("cite", {"chunk_ids": ids[:2]})])
        return ModelResponse(parts=[TextPart("The figure shows it [1].")])


def measure(messages: list[ModelMessage], instructions: str | None) -> dict[str, int]:
    """A request's text characters, and its images and their bytes."""
    chars, images, image_bytes = len(instructions or ""), 0, 0
    for m in messages:
        for p in m.parts:
            content = p.content if isinstance(p, ToolReturnPart | UserPromptPart) else None
            items = content if isinstance(content, list) else [content] if content is not None else []
            for item in items:
                if isinstance(item, BinaryContent):
                    images += 1
                    image_bytes += len(item.data)
                elif item is not None:
                    chars += len(str(item))
            if isinstance(p, TextPart):
                chars += len(p.content)
            elif isinstance(p, ToolCallPart):
                chars += len(p.tool_name + p.args_as_json_str())
    return {"chars": chars, "images": images, "image_bytes": image_bytes}


def converse(config: Path, questions: list[str], *, compaction: bool) -> list[dict[str, int]]:
    """Hold the conversation; per question, its largest request."""
    ws = Workspace.load(config)
    asker = Asker()
    capabilities = [
        RetrievalCapability(ws),
        CitationPolicy(),
        *([EvidenceCompaction()] if compaction else []),
    ]
    agent = Agent(FunctionModel(asker.respond), deps_type=HaikuDeps, capabilities=capabilities)
    deps, history = HaikuDeps(), []
    rows = []
    for q in questions:
        asker.begin(q)
        history = agent.run_sync(q, deps=deps, message_history=history).all_messages()
        rows.append(max(asker.requests[-1], key=lambda r: r["chars"] + r["image_bytes"]))
    return rows


def main() -> None:
    """Ingest with and without pictures, then converse with and without compaction; print (and JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdfs", type=Path, default=DEFAULT_PDFS)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with result("pictures", "Pictures: ingest cost") as table:
        pictures_rows(table, run(args))


def pictures_rows(table: Table, found: dict) -> None:
    """Ingest with pictures against without, and the last turn's largest request with and without
    compaction."""
    ours, plain = found["ingest"]["with"], found["ingest"]["without"]
    table.add(
        f"`add-src` of {ours['documents_added']} real PDFs ({ours['pages']} pages) with pictures",
        f"{ours['pages_per_second']} pages/s, {ours['bytes_per_page']:,} bytes/page stored, "
        f"{ours['pictures']} pictures",
        f"without pictures: {plain['pages_per_second']} pages/s, {plain['bytes_per_page']:,} bytes/page",
        f"{ratio(ours['pages_per_second'], plain['pages_per_second'])} speed, "
        f"{ratio(ours['bytes_per_page'], plain['bytes_per_page'])} bytes",
    )
    last, compacted = found["plain"][-1], found["compacted"][-1]
    table.add(
        f"{len(found['compacted'])}-turn chat citing pictures, compacted: largest request of the last turn",
        f"{compacted['chars']:,} chars + {compacted['images']} images ({compacted['image_bytes']:,} bytes)",
        f"without compaction: {last['chars']:,} chars + {last['images']} images",
        ratio(compacted["chars"], last["chars"]),
    )


def run(args: argparse.Namespace) -> dict:
    work = args.work or Path(tempfile.mkdtemp(prefix="haiku-pictures-"))
    work.mkdir(parents=True, exist_ok=True)
    config, with_pictures = ingest(work, args.pdfs, pictures=True)
    _, without = ingest(work, args.pdfs, pictures=False)
    print("ingest            pages  seconds  pages/s  pictures  bytes/page")
    for label, row in (("with pictures", with_pictures), ("without", without)):
        print(
            f"{label:<16} {row['pages']:>6} {row['seconds']:>8} {row['pages_per_second']:>8} "
            f"{row['pictures']:>9} {row['bytes_per_page']:>11}"
        )
    questions = questions_with_pictures(config)
    print(f"{len(questions)} questions", file=sys.stderr)
    plain = converse(config, questions, compaction=False)
    compacted = converse(config, questions, compaction=True)
    print("turn  largest request: chars + images (image bytes): plain -> compacted")
    for i, (a, b) in enumerate(zip(plain, compacted, strict=True), 1):
        print(
            f"{i:>4}  {a['chars']:>7} + {a['images']:>2} ({a['image_bytes']:>8}) -> "
            f"{b['chars']:>7} + {b['images']:>2} ({b['image_bytes']:>8})"
        )
    found = {"ingest": {"with": with_pictures, "without": without}, "plain": plain, "compacted": compacted}
    if args.json:
        print(json.dumps(found))
    return found


if __name__ == "__main__":
    main()
