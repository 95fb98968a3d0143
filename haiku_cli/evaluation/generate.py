"""`haiku eval --generate N`: a draft questions file, one question per sampled chunk, written by the
configured model, its document as the expected answer. A draft for the user to review, not ground truth:
a question the model words from one passage may be answered by others too."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models import Model

from haiku_cli.agents.model_names import model_name
from haiku_cli.agents.models import model_errors, resolve_model, whole_request
from haiku_cli.databases import queries
from haiku_cli.databases.selection import Selection, searchable
from haiku_cli.databases.workspace import Workspace
from haiku_cli.errors import InputError
from haiku_cli.evaluation.documents import load_index, path_of
from haiku_cli.evaluation.retrieval_quality import Progress

INSTRUCTIONS = (
    "You write one search question that the given passage answers, as a reader of these documents would "
    "ask it without having seen the passage. Reply with the question alone, on one line."
)
SEED = 0
_PASSAGE_CHARS = 4000


class GeneratedQuestions(BaseModel):
    """What `--generate` wrote."""

    path: str
    questions: int
    databases: list[str]


async def generate_questions(
    ws: Workspace,
    selection: Selection,
    path: Path,
    count: int,
    *,
    model: str | Model | None = None,
    seed: int = SEED,
    progress: Progress | None = None,
) -> GeneratedQuestions:
    """Write `count` draft questions to `path` (which must not exist), one per sampled chunk."""
    if count < 1:
        raise InputError(f"--generate needs 1 or more questions, got {count}", argument="generate")
    if path.exists():
        raise InputError(f"{path} already exists; name a new file for the draft questions")
    chosen = resolve_model(ws.settings.model, model)
    label = chosen.model_name if isinstance(model, Model) else model_name(ws.settings.model, model)
    searched, _ = searchable(selection)
    index = await load_index(ws, searched)
    if not index.documents:
        raise InputError(f"no documents in {', '.join(searched.names)} to write questions from")
    rng = random.Random(seed)
    keys = sorted(index.documents)
    picked = rng.sample(keys, count) if count <= len(keys) else [rng.choice(keys) for _ in range(count)]
    locations = {loc.name: loc for loc in searched.locations}
    agent = Agent(chosen, output_type=str, instructions=INSTRUCTIONS)
    lines = []
    for n, (database, doc_id) in enumerate(picked, 1):
        doc = await queries.get_document(ws, locations[database], doc_id)
        if not doc.chunks:
            continue
        chunk = rng.choice(doc.chunks)
        with model_errors(label, chosen.base_url, ws.settings.model.timeout_seconds):
            run = await agent.run(
                f"Passage:\n{chunk.text[:_PASSAGE_CHARS]}", model_settings=whole_request(ws.settings.model)
            )
        question = " ".join(run.output.split())
        if question:
            lines.append(
                _line(f"g{n}", question, doc.document.uri or doc_id, chunk.line_start, chunk.line_end)
            )
        if progress is not None:
            progress(n, len(picked))
    path.write_text("".join(lines), encoding="utf-8")
    return GeneratedQuestions(path=str(path), questions=len(lines), databases=searched.names)


def _line(qid: str, question: str, expected: str, start: int | None, end: int | None) -> str:
    row: dict[str, str] = {"id": qid, "query": question, "expected": path_of(expected)}
    if start is not None and end is not None:
        row["lines"] = f"{start}:{end}"
    return json.dumps(row, ensure_ascii=False) + "\n"
