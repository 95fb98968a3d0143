"""`haiku config show`: the settings in effect, as TOML that loads as a config file."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from haiku_cli.cli import output

if TYPE_CHECKING:
    from haiku_cli.api import ResolvedConfig


def config(shown: ResolvedConfig) -> None:
    """`haiku config show`: the settings as TOML that loads as a config file, sources as comments.

    Secrets (the MCP token, secret-looking storage options) are named in comments, never given a value.
    """
    exists = "" if shown.config_exists else " (not there yet: defaults apply)"
    output.out.print(f"# config file: {shown.config_file}{exists}", markup=False, style="dim")
    output.out.print(f"# data dir:    {shown.data_dir}", markup=False, style="dim")
    data = shown.settings.model_dump(mode="json")
    if not data["databases"]:
        where = f"{shown.data_dir}/default.lancedb"
        output.out.print(f"\n# no databases configured: the default one is at {where}", markup=False)
    for section, values in data.items():
        if not values:
            continue
        output.out.print(f"\n[{section}]", style="bold", markup=False)
        for key, value in values.items():
            if value is None:
                line = f"# {key} is not set"
            elif value == shown.HIDDEN:
                line = f"# {key} is set but not shown (a secret)"
            else:
                line = f"{_toml_key(key)} = {_toml(value, leave_out=shown.HIDDEN)}"
                if secrets := _hidden_keys(value, shown.HIDDEN):
                    line += f"  # not shown (secrets): {', '.join(secrets)}"
            output.out.print(line, markup=False)


def _hidden_keys(value: object, mark: str, prefix: str = "") -> list[str]:
    # Secrets are left out of the TOML rather than printed as a placeholder that would load as their value.
    if not isinstance(value, dict):
        return []
    found = []
    for k, v in value.items():
        found += [f"{prefix}{k}"] if v == mark else _hidden_keys(v, mark, f"{prefix}{k}.")
    return found


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml(value: object, leave_out: str | None = None) -> str:
    """A value in TOML syntax (strings quoted, tables inline, unset keys and `leave_out` values left out)."""
    if isinstance(value, dict):
        items = [
            f"{_toml_key(k)} = {_toml(v, leave_out)}"
            for k, v in value.items()
            if v is not None and v != leave_out
        ]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
