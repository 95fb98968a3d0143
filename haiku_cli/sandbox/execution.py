"""What one program run in the sandbox left: plain data, for results read without loading the sandbox."""

from __future__ import annotations

from pydantic import BaseModel


class Execution(BaseModel):
    """One program the model ran, with what it printed and whether it finished without error."""

    code: str
    stdout: str
    stderr: str
    ok: bool

    def for_model(self) -> str:
        """The tool result the model reads."""
        parts = ["ok" if self.ok else "error"]
        if self.stdout:
            parts.append(f"stdout:\n{self.stdout.rstrip()}")
        if self.stderr:
            parts.append(f"stderr:\n{self.stderr.rstrip()}")
        if self.ok and not self.stdout:
            parts.append("(no output: print() what you want to see)")
        return "\n".join(parts)
