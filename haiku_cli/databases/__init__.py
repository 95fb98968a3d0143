"""Databases as users name them: selections, the one rule that opens them, and fan-out over a set."""
