"""`--debug` and `--config` work after the command's name as well as before it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haiku_cli.errors import InputError


def test_config_after_the_command_is_the_config_read(cli, tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text(f'[databases]\nnotes = "{tmp_path / "notes.lancedb"}"\n', encoding="utf-8")
    before = json.loads(cli("--config", str(other), "databases", "--json").stdout)
    after = cli("databases", "--json", "--config", str(other))
    assert after.exit_code == 0, after.stderr
    assert json.loads(after.stdout) == before and [d["database"] for d in before] == ["notes"]
    assert cli("config", "path", "--config", str(other)).stdout.strip() == str(other)


def test_debug_after_the_command_lets_the_traceback_through(cli) -> None:
    cli("add", "some text")
    assert cli("get", "nope").exit_code == 1  # without it: one line
    with pytest.raises(InputError):
        cli("get", "nope", "--debug")
    assert "--debug" in cli("search", "--help").stdout
