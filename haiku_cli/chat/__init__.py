"""Conversations over the selected databases: saved sessions and the host loop `haiku chat` drives."""

from haiku_cli.chat.host import ChatHost, TextSink, ask_in_session
from haiku_cli.chat.sessions import Session, SessionStore, SessionSummary, Turn

__all__ = ["ChatHost", "Session", "SessionStore", "SessionSummary", "TextSink", "Turn", "ask_in_session"]
