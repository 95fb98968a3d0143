"""Agents built from haiku's capabilities: `ask` answers a question with citations."""
