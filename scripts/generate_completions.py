"""Regenerate completions/ from the typer app: python scripts/generate_completions.py"""

from pathlib import Path

from haiku_cli.cli.completions import write_all

if __name__ == "__main__":
    for path in write_all(Path(__file__).resolve().parent.parent / "completions"):
        print(path)
