"""Read the TOML config file into `Settings`, with errors that name the key and the file."""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import tomllib
from pathlib import Path

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from haiku_cli.config.paths import config_path, missing_is_an_error, read_config_bytes
from haiku_cli.config.settings import MIN_TOKEN_CHARS, DatabaseSettings, Settings
from haiku_cli.errors import InputError

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def _empty_config_dir(named: str, path: Path) -> bool:
    return named == "HAIKU_CONFIG_DIR" and path.parent.is_dir()


def load_settings(explicit: Path | None = None) -> tuple[Settings, Path]:
    """Load settings from the resolved config path; a missing file at the default location means defaults.

    A file named by `--config` or `HAIKU_CONFIG` must exist; a folder named by `HAIKU_CONFIG_DIR` must
    exist, and without a config.toml in it the defaults apply, as in the default folder.
    """
    path = config_path(explicit)
    data: dict = {}
    if path.exists():
        try:
            data = tomllib.loads(read_config_bytes(path).decode("utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read config file {path}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"config file {path} is not valid TOML: {exc}") from exc
    elif (named := missing_is_an_error(explicit)) is not None:
        # A named file (or folder) that is not there is a typo or a missing mount, not a wish for the
        # defaults; a named folder that is there but holds no config yet is the default folder's case.
        raise InputError(
            f"config file {path} (named by {named}) does not exist; create it "
            "(an empty file means the defaults) or name another"
        )
    try:
        # Strict: TOML has real booleans and numbers, so `read_only = "yes"` or `max_executions = true` is a
        # mistake to name, not a value to coerce. (Environment overrides are strings, parsed below.)
        settings = Settings.model_validate(data, strict=True)
    except ValidationError as exc:
        raise InputError(_describe(exc, path)) from exc
    for name in settings.databases:
        if not _NAME.match(name):
            raise InputError(
                f"database name {name!r} in {path} is not valid: use letters, digits, '_', '-' and '.'"
            )
    settings = _seconds_from_env(settings)
    settings = _mcp_from_env(settings)
    settings = _ocr_from_env(settings)
    settings = _relative_to(settings, path.parent)
    model_env = os.environ.get("HAIKU_MODEL")
    if model_env:
        settings = settings.model_copy(
            update={"model": settings.model.model_copy(update={"name": model_env})}
        )
    return settings, path


# Environment overrides of timeouts and waits, for one command or a script: HAIKU_WRITE_WAIT=0 haiku add ...
_SECONDS_ENV = {
    "HAIKU_WRITE_WAIT": ("storage", "write_wait_seconds"),
    "HAIKU_STORAGE_TIMEOUT": ("storage", "timeout_seconds"),
    "HAIKU_LEASE_SECONDS": ("storage", "lease_seconds"),
    "HAIKU_EMBEDDER_TIMEOUT": ("embedder", "timeout_seconds"),
    "HAIKU_MODEL_TIMEOUT": ("model", "timeout_seconds"),
    "HAIKU_OCR_PAGE_SECONDS": ("ingest", "ocr_page_seconds"),
}
_OCR_MODES = ("auto", "off", "always")


def _seconds_from_env(settings: Settings) -> Settings:
    updates: dict[str, dict[str, float]] = {}
    for env, (section, key) in _SECONDS_ENV.items():
        raw = os.environ.get(env)
        if raw is None or not raw.strip():
            continue
        try:
            value = float(raw)
        except ValueError:
            raise InputError(f"{env} must be a number of seconds, got {raw!r}") from None
        if not math.isfinite(value):  # float() reads "inf" and "nan"
            raise InputError(f"{env} must be a finite number of seconds, got {raw!r}")
        if value < 0 or (key in ("timeout_seconds", "ocr_page_seconds") and value == 0):
            raise InputError(f"{env} must be a positive number of seconds, got {raw!r}")
        if key == "lease_seconds" and value < 1:
            raise InputError(f"{env} must be at least 1 second, got {raw!r}")
        updates.setdefault(section, {})[key] = value
    for section, values in updates.items():
        part = getattr(settings, section).model_copy(update=values)
        settings = settings.model_copy(update={section: part})
    return settings


def _ocr_from_env(settings: Settings) -> Settings:
    # HAIKU_OCR=off haiku add-src scans/  (auto | off | always)
    mode = os.environ.get("HAIKU_OCR", "").strip().lower()
    if not mode:
        return settings
    if mode not in _OCR_MODES:
        raise InputError(f"HAIKU_OCR must be one of {', '.join(_OCR_MODES)}, got {mode!r}")
    return settings.model_copy(update={"ingest": settings.ingest.model_copy(update={"ocr": mode})})


def _mcp_from_env(settings: Settings) -> Settings:
    # A token kept out of the config file: HAIKU_MCP_TOKEN=... haiku mcp --http
    token = os.environ.get("HAIKU_MCP_TOKEN", "").strip()
    if not token:
        return settings
    if len(token) < MIN_TOKEN_CHARS:
        raise InputError(f"HAIKU_MCP_TOKEN must be at least {MIN_TOKEN_CHARS} characters long")
    return settings.model_copy(update={"mcp": settings.mcp.model_copy(update={"http_token": token})})


def _relative_to(settings: Settings, folder: Path) -> Settings:
    """Relative database paths mean the config file's folder, wherever haiku is run from."""
    databases = {}
    for name, db in settings.databases.items():
        if "://" not in db.uri and not Path(db.uri).expanduser().is_absolute():
            db = db.model_copy(update={"uri": str((folder / db.uri).resolve())})
        databases[name] = db
    return settings.model_copy(update={"databases": databases})


def _describe(exc: ValidationError, path: Path) -> str:
    # A misspelt key is also a missing one (`url` for `uri`): the typo is what to name.
    err = min(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    key = _toml_key(err["loc"])
    if err["type"] == "extra_forbidden":
        return f"unknown key '{key}' in config file {path}{_known(err['loc'])}"
    if err["type"] == "missing":
        return f"missing key '{key}' in config file {path}: write {err['loc'][-1]} = \"...\""
    return f"invalid value for '{key}' in config file {path}: {_expected(err)}"


def _known(loc: tuple[int | str, ...]) -> str:
    """The key that was probably meant, else the keys its table takes."""
    table: type[BaseModel] | None = Settings
    for part in loc[:-1]:
        if table is Settings and part == "databases":
            table = None  # the next part is a database's name
        elif table is None:
            table = DatabaseSettings
        else:
            annotation = table.model_fields[str(part)].annotation
            table = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    if table is None:
        return ""
    keys = list(table.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), keys, n=1)
    if close:
        return f"; did you mean '{close[0]}'?"
    where = f"[{'.'.join(str(p) for p in loc[:-1])}]" if len(loc) > 1 else "the top level"
    return f"; {where} takes {', '.join(keys)}"


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(loc: tuple[int | str, ...]) -> str:
    """A key as the docs name it: `[databases.notes] read_only`, or `embedder` at the top level."""
    parts = [str(p) if _BARE_KEY.match(str(p)) else json.dumps(str(p)) for p in loc]
    if len(parts) == 1:
        return parts[0]
    return f"[{'.'.join(parts[:-1])}] {parts[-1]}"


# pydantic's wording ("Input should be a valid string", "instance of DatabaseSettings") speaks Python;
# these say what to write in the TOML file instead.
_NUMBER_BOUNDS = {
    "greater_than": "more than {gt:g}",
    "greater_than_equal": "of at least {ge:g}",
    "less_than": "less than {lt:g}",
    "less_than_equal": "of at most {le:g}",
}


def _expected(err: ErrorDetails) -> str:
    loc, kind, ctx = err["loc"], err["type"], err.get("ctx", {})
    leaf = str(loc[-1])
    if loc[0] == "databases" and kind in ("model_type", "dict_type") and len(loc) <= 2:
        if len(loc) == 1:
            return 'expected a [databases] table of name = "path" entries'
        return 'expected a path string or a { uri = "..." } table'
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        if len(loc) == 1:
            return f"expected a table: its keys under a [{leaf}] heading"
        return f'expected a table, e.g. {leaf} = {{ key = "value" }}'
    if kind == "string_type":
        return f'expected text in quotes, e.g. {leaf} = "..."'
    if kind.startswith("int_"):
        return f"expected a whole number without quotes, got {_toml(err['input'])}"
    if kind.startswith("float_"):
        return f"expected a number without quotes, got {_toml(err['input'])}"
    if kind.startswith("bool_"):
        return f"expected true or false, got {_toml(err['input'])}"
    if kind in _NUMBER_BOUNDS:
        return f"expected a number {_NUMBER_BOUNDS[kind].format(**ctx)}, got {_toml(err['input'])}"
    if kind == "finite_number":
        return f"expected a finite number, got {_toml(err['input'])}"
    if kind == "string_too_short":  # the MCP token: never echoed back
        return f"expected at least {ctx['min_length']} characters, got fewer"
    if kind == "value_error":
        return str(ctx["error"])
    return err["msg"]


def _toml(value: object) -> str:
    """A value as it reads in the TOML file."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)
