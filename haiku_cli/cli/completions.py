"""Shell completion scripts for bash, zsh and fish, generated from the typer app."""

from __future__ import annotations

from pathlib import Path

SHELLS = {"bash": "haiku.bash", "zsh": "_haiku", "fish": "haiku.fish"}


def completion_script(shell: str) -> str:
    """The completion script for one shell: typer's protocol, answered by `haiku` itself at run time."""
    from typer._completion_shared import get_completion_script

    script = get_completion_script(prog_name="haiku", complete_var="_HAIKU_COMPLETE", shell=shell)
    return script if script.endswith("\n") else script + "\n"  # a text file ends with its last line's newline


def write_all(folder: Path) -> list[Path]:
    """Write every shell's script into `folder` (the repo's completions/)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for shell, filename in SHELLS.items():
        path = folder / filename
        path.write_text(completion_script(shell), encoding="utf-8")
        written.append(path)
    return written
