"""`haiku --help` at 80 columns: every command's first sentence whole, and examples."""

from __future__ import annotations

import pytest


def test_help_lists_commands_without_cuts_and_shows_examples(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    shown = cli("--help").stdout
    assert "..." not in shown.replace("[ARGS]...", "")
    assert all(len(line) <= 80 for line in shown.splitlines()), shown
    commands = shown[shown.index("Commands:") : shown.index("Examples:")]
    flat = " ".join(commands.split())
    assert "add-src Add files, directories and URLs; unsupported or unreadable ones are reported and" in flat
    assert "search Search the selected databases (all configured ones by default)." in flat
    examples = shown[shown.index("Examples:") :].splitlines()
    assert any(line.strip().startswith('haiku search "') for line in examples)
    assert sum(line.strip().startswith("haiku ") for line in examples) >= 5


@pytest.mark.parametrize("command", ["search", "get", "list"])
def test_the_commands_people_start_with_show_examples(
    cli, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    shown = cli(command, "--help").stdout
    examples = shown[shown.index("Examples:") :].splitlines()[1:]
    assert sum(line.strip().startswith(f"haiku {command} ") for line in examples) >= 3
    assert all(len(line) <= 80 for line in shown.splitlines()), shown


def _leaf_commands() -> list[str]:
    import typer

    from haiku_cli.cli.app import build_app

    def walk(command, path: list[str]):
        if not hasattr(command, "list_commands"):
            yield " ".join(path)
            return
        for name in command.list_commands(None):
            yield from walk(command.get_command(None, name), [*path, name])

    return list(walk(typer.main.get_command(build_app()), []))


@pytest.mark.parametrize("command", _leaf_commands())
def test_every_command_shows_examples_and_plain_metavars(
    cli, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    shown = cli(*command.split(), "--help").stdout
    usage = shown.splitlines()[0]
    assert "{" not in usage, usage  # `DOC`, not typer's `{DOC}`
    examples = shown[shown.index("Examples:") :].splitlines()[1:]
    assert 1 <= sum(line.strip().startswith(f"haiku {command}") for line in examples) <= 3, shown
