"""A scripted conversation for the OpenAI-compatible stub: each question searches, cites and answers."""

from __future__ import annotations

import re
from typing import Any

from tests.cli.openai_stub import Reply, answer, tool_call

_SHOWN_ID = re.compile(r"^\[([0-9a-f-]{36})\]", re.MULTILINE)

# question keyword -> (search query, final answer)
TOPICS = {
    "capital": ("capital of France", "The capital of France is **Paris** [1]."),
    "basil": ("basil sun", "Basil needs at least six hours of sun [1]."),
    "atp": ("mitochondrion ATP", "The mitochondrion produces ATP [1]."),
}
SLOW = "Once upon a time there was a very long answer that took its time to arrive " * 4


def question(body: dict[str, Any]) -> str:
    """The latest user message."""
    return [m["content"] for m in body["messages"] if m["role"] == "user"][-1]


def steps_into_question(body: dict[str, Any]) -> int:
    """How many model responses the current question has had so far."""
    messages = body["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return sum(1 for m in messages[last_user:] if m["role"] == "assistant")


def conversation(body: dict[str, Any]) -> Reply:
    """Search, cite the top result, answer; a question mentioning `slow` streams a long answer slowly."""
    asked = question(body).lower()
    if "slow" in asked:
        return answer(SLOW, delay=0.2)
    topic = next((t for t in TOPICS if t in asked), "capital")
    query, final = TOPICS[topic]
    step = steps_into_question(body)
    asked_before = sum(1 for m in body["messages"] if m["role"] == "user")
    if step == 0:
        return tool_call("search", {"query": query}, f"call_{asked_before}_search")
    if step == 1:
        latest = [m["content"] for m in body["messages"] if m["role"] == "tool"][-1]
        return tool_call("cite", {"chunk_ids": _SHOWN_ID.findall(latest)[:1]}, f"call_{asked_before}_cite")
    return answer(final)
