"""The exit codes a user can meet are the ones the README's table documents; another library's exception
reads as one line of a message."""

import re
from pathlib import Path

from haiku_cli.errors import ExitCode, exception_reason

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_table_lists_exactly_the_exit_codes() -> None:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Exit codes") :].split("\n## ")[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}
    assert documented == {int(code) for code in ExitCode}


def test_another_librarys_exception_reads_as_one_line_of_a_message() -> None:
    multiline = OSError("AWS Error ACCESS_DENIED during ListObjects:\n  Access Denied.\n  request id: 7")
    assert (
        exception_reason(multiline)
        == "AWS Error ACCESS_DENIED during ListObjects: Access Denied. request id: 7"
    )
    assert exception_reason(multiline, upto="line") == "AWS Error ACCESS_DENIED during ListObjects:"
    sentence = ValueError("The model is busy. See https://example.org/status for more.")
    assert exception_reason(sentence, upto="sentence") == "The model is busy."
    long = OSError("x" * 400)
    assert exception_reason(long, limit=300, cut="…") == "x" * 299 + "…"
    assert exception_reason(long, upto="sentence", limit=300) == "x" * 300
    assert exception_reason(ValueError("  \n ")) == "ValueError"  # no words: its type says what it was
