"""Conversations over the selected databases: saved sessions and the host loop `haiku chat` drives."""

from haiku_cli.chat.host import ChatHost, SessionAnswer, TextSink, ask_in_session
from haiku_cli.chat.sessions import Session, SessionList, SessionStore, SessionSummary, Turn

__all__ = [
    "ChatHost",
    "Session",
    "SessionAnswer",
    "SessionList",
    "SessionStore",
    "SessionSummary",
    "TextSink",
    "Turn",
    "ask_in_session",
]
