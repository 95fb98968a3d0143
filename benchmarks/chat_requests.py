"""Request size per turn of `haiku chat`: compaction.py's scripted 10-question conversation, via ChatHost.

Same database, questions, scripted model and size measure as `compaction.py` (each question searches
twice, cites two chunks and answers), but held through `ChatHost`, the library loop behind `haiku chat`:
the chat's instructions, search budget, capabilities and carried session, saved after every answer. Run
once as the chat is configured (with evidence compaction) and once with compaction left out, for the ratio.

    python benchmarks/chat_requests.py [--data ../shared/data/cisi] [--docs 300] [--work DIR] [--json]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import anyio
from common import result
from compaction import Conversationalist, conversation, turn_rows
from pydantic_ai.models.function import FunctionModel

from haiku_cli.chat.host import ChatHost
from haiku_cli.chat.sessions import SessionStore
from haiku_cli.databases.workspace import Workspace


async def converse(
    ws: Workspace, questions: Sequence[str], store: SessionStore, compaction: bool
) -> list[dict[str, int]]:
    """Hold the conversation through the chat host; per question, its first and largest request."""
    model = Conversationalist()
    scripted = FunctionModel(model.respond)
    host = await ChatHost.open(ws, session=None, model=scripted, store=store, compaction=compaction)
    rows = []
    for q in questions:
        model.begin(q)
        await host.ask(q)
        rows.append(model.sizes(ws.embedder))
    return rows


def main() -> None:
    """Build (or reuse) the database, hold the chat with and without compaction, print the curve."""
    with result("chat", "Request size in `haiku chat`") as table:
        args, ws, questions = conversation(__doc__, "haiku-chat-requests-")
        store = SessionStore(args.work / "sessions")
        chat = anyio.run(converse, ws, questions, store, True)
        plain = anyio.run(converse, ws, questions, store, False)
        label = f"`haiku chat`, {len(chat)} questions"
        turn_rows(table, label, chat[-1], plain[-1], "compaction left out")
    print("turn  requests  first request chars  largest request chars (tokens): no compaction -> chat  ratio")
    for i, (a, b) in enumerate(zip(plain, chat, strict=True), 1):
        ratio = b["largest_chars"] / a["largest_chars"]
        print(
            f"{i:>4}  {b['requests']:>8}  {a['first_chars']:>7} -> {b['first_chars']:>7}  "
            f"{a['largest_chars']:>7} ({a['largest_tokens']:>6}) -> "
            f"{b['largest_chars']:>7} ({b['largest_tokens']:>6})  {ratio:.2f}"
        )
    if args.json:
        print(json.dumps({"docs": args.docs, "no_compaction": plain, "chat": chat}))


if __name__ == "__main__":
    main()
