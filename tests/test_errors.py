"""The exit codes a user can meet are the ones the README's table documents."""

import re
from pathlib import Path

from haiku_cli.errors import ExitCode

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_table_lists_exactly_the_exit_codes() -> None:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Exit codes") :].split("\n## ")[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}
    assert documented == {int(code) for code in ExitCode}
