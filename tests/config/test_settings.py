"""Config resolution and validation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from haiku_cli.config import Settings, config_path, load_settings
from haiku_cli.config.paths import MAX_CONFIG_BYTES, data_dir
from haiku_cli.errors import ExitCode, InputError


def test_no_file_at_the_default_location_means_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HAIKU_CONFIG")
    monkeypatch.setattr("platformdirs.user_config_dir", lambda app: str(tmp_path / "user-config" / app))
    settings, path = load_settings()
    assert path == tmp_path / "user-config" / "haiku" / "config.toml" and not path.exists()
    assert settings.databases == {}
    assert settings.search.limit == 10


def test_an_empty_file_means_defaults(isolated: Path) -> None:
    settings, path = load_settings()
    assert path == isolated / "config.toml" and path.read_text() == ""
    assert settings == Settings()


@pytest.mark.parametrize("how", ["--config", "HAIKU_CONFIG"])
def test_a_named_config_file_that_does_not_exist_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # A typo in HAIKU_CONFIG must not silently mean the defaults (and write to the default database).
    missing = tmp_path / "team.toml"
    monkeypatch.setenv("HAIKU_CONFIG", str(missing))
    with pytest.raises(InputError) as err:
        load_settings(missing if how == "--config" else None)
    assert str(err.value).startswith(f"config file {missing} (named by {how}) does not exist; create it")


def test_precedence_flag_over_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = tmp_path / "other.toml"
    assert config_path(explicit) == explicit
    monkeypatch.delenv("HAIKU_CONFIG")
    assert config_path().name == "config.toml" and "haiku" in str(config_path())


def test_relative_paths_from_the_environment_are_made_absolute_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HAIKU_DATA_DIR", "rel/data")
    monkeypatch.setenv("HAIKU_CONFIG", "~/../rel.toml")
    assert data_dir() == tmp_path / "rel" / "data"
    assert config_path().is_absolute() and ".." not in config_path().parts and "~" not in str(config_path())
    assert config_path(Path("team.toml")) == tmp_path / "team.toml"


def test_haiku_config_dir_names_the_folder_of_config_toml_and_haiku_config_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "config.toml").write_text("[search]\nlimit = 3\n")
    monkeypatch.setenv("HAIKU_CONFIG_DIR", "team")
    assert config_path() == tmp_path / "config.toml"  # HAIKU_CONFIG (set by `isolated`) wins
    monkeypatch.delenv("HAIKU_CONFIG")
    settings, path = load_settings()
    assert path == tmp_path / "team" / "config.toml" and settings.search.limit == 3
    (tmp_path / "team" / "config.toml").unlink()  # a folder without a config yet: the defaults, as by default
    settings, path = load_settings()
    assert path == tmp_path / "team" / "config.toml" and settings.search.limit == Settings().search.limit
    monkeypatch.setenv(
        "HAIKU_CONFIG_DIR", "nowhere"
    )  # a folder that is not there is a typo, not the defaults
    with pytest.raises(InputError, match=r"config.toml \(named by HAIKU_CONFIG_DIR\) does not exist"):
        load_settings()


def test_short_and_long_database_forms(write_config) -> None:
    write_config(
        """
[databases]
notes = "~/notes.lancedb"
papers = { uri = "s3://lab/papers.lancedb", storage_options = { region = "eu-west-1", allow_http = true } }
"""
    )
    settings, _ = load_settings()
    assert settings.databases["notes"].uri == "~/notes.lancedb"
    assert settings.databases["papers"].storage_options == {"region": "eu-west-1", "allow_http": "true"}


def test_unknown_key_names_key_and_file(write_config) -> None:
    path = write_config("[search]\nlimt = 3\n")
    with pytest.raises(InputError) as err:
        load_settings()
    assert "'[search] limt'" in str(err.value) and str(path) in str(err.value)


def test_invalid_toml_is_one_clear_error(write_config) -> None:
    write_config("[databases\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_settings()


def test_haiku_model_env_overrides_file(write_config, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config('[model]\nname = "openai:gpt-4o"\n')
    monkeypatch.setenv("HAIKU_MODEL", "ollama:qwen3")
    settings, _ = load_settings()
    assert settings.model.name == "ollama:qwen3"


def test_storage_waits_from_config_and_environment(write_config, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config("[storage]\nwrite_wait_seconds = 5\n")
    assert load_settings()[0].storage.write_wait_seconds == 5
    monkeypatch.setenv("HAIKU_WRITE_WAIT", "0")
    monkeypatch.setenv("HAIKU_STORAGE_TIMEOUT", "2.5")
    storage = load_settings()[0].storage
    assert (storage.write_wait_seconds, storage.timeout_seconds) == (0, 2.5)
    monkeypatch.setenv("HAIKU_LEASE_SECONDS", "5")
    assert load_settings()[0].storage.lease_seconds == 5
    monkeypatch.setenv("HAIKU_LEASE_SECONDS", "0.5")  # shorter than one renewal of a store's lease takes
    with pytest.raises(InputError, match=r"HAIKU_LEASE_SECONDS must be at least 1 second, got '0\.5'"):
        load_settings()
    monkeypatch.delenv("HAIKU_LEASE_SECONDS")
    monkeypatch.setenv("HAIKU_WRITE_WAIT", "soon")
    with pytest.raises(InputError, match="HAIKU_WRITE_WAIT must be a number of seconds"):
        load_settings()
    monkeypatch.setenv("HAIKU_WRITE_WAIT", "inf")  # float() reads it; no wait is that long
    with pytest.raises(InputError, match="HAIKU_WRITE_WAIT must be a finite number of seconds, got 'inf'"):
        load_settings()


def test_model_and_embedder_timeouts_from_config_and_environment(
    write_config, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config("[model]\ntimeout_seconds = 40\n[embedder]\ntimeout_seconds = 20\n")
    settings = load_settings()[0]
    assert (settings.model.timeout_seconds, settings.embedder.timeout_seconds) == (40, 20)
    monkeypatch.setenv("HAIKU_MODEL_TIMEOUT", "7")
    monkeypatch.setenv("HAIKU_EMBEDDER_TIMEOUT", "0.5")
    settings = load_settings()[0]
    assert (settings.model.timeout_seconds, settings.embedder.timeout_seconds) == (7, 0.5)
    monkeypatch.setenv("HAIKU_EMBEDDER_TIMEOUT", "0")
    with pytest.raises(InputError, match="HAIKU_EMBEDDER_TIMEOUT must be a positive number of seconds"):
        load_settings()


def test_values_of_the_right_toml_type_are_read_as_written(write_config) -> None:
    # Strictness refuses only the wrong type: an integer where a number of seconds is asked is fine, and
    # storage options stay strings for LanceDB whatever scalar TOML type the user wrote.
    write_config(
        """
[databases]
notes = { uri = "n", read_only = true, storage_options = { allow_http = true, timeout = 30, ratio = 0.5 } }

[sandbox]
timeout_seconds = 5
max_executions = 3
"""
    )
    settings = load_settings()[0]
    notes = settings.databases["notes"]
    assert notes.read_only is True
    assert notes.storage_options == {"allow_http": "true", "timeout": "30", "ratio": "0.5"}
    assert (settings.sandbox.timeout_seconds, settings.sandbox.max_executions) == (5.0, 3)


def test_mcp_token_from_config_and_environment_and_hidden_when_shown(
    write_config, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haiku_cli.config.resolved import HIDDEN, resolved_config

    assert load_settings()[0].mcp.http_token is None
    write_config('[mcp]\nhttp_token = "from-the-config-file"\n')
    settings, path = load_settings()
    assert settings.mcp.http_token == "from-the-config-file"
    assert resolved_config(settings, path).settings.mcp.http_token == HIDDEN
    monkeypatch.setenv("HAIKU_MCP_TOKEN", "from-the-environment")
    assert load_settings()[0].mcp.http_token == "from-the-environment"
    monkeypatch.setenv("HAIKU_MCP_TOKEN", "short")
    with pytest.raises(InputError, match="HAIKU_MCP_TOKEN must be at least 16 characters"):
        load_settings()
    monkeypatch.delenv("HAIKU_MCP_TOKEN")
    write_config('[mcp]\nhttp_token = "short"\n')
    with pytest.raises(InputError, match=r"invalid value for '\[mcp\] http_token'"):
        load_settings()


def test_search_limit_is_bounded_as_the_limit_option_is(write_config) -> None:
    write_config("[search]\nlimit = 10000\n")
    assert load_settings()[0].search.limit == 10_000
    path = write_config("[search]\nlimit = 10001\n")
    with pytest.raises(InputError) as err:
        load_settings()
    message = str(err.value)
    assert "'[search] limit'" in message and str(path) in message and "10000" in message
    assert "--limit" not in message


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            "[databases]\nnotes = 3\n",
            "'[databases] notes' in config file {path}: expected a path string or a",
        ),
        ("databases = 3\n", "'databases' in config file {path}: expected a [databases] table"),
    ],
)
def test_a_database_entry_of_a_wrong_shape_says_what_to_write(write_config, toml: str, expected: str) -> None:
    path = write_config(toml)
    with pytest.raises(InputError) as err:
        load_settings()
    assert expected.format(path=path) in str(err.value) and "DatabaseSettings" not in str(err.value)


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        # A misspelt key is named (not the key it leaves missing), with the key probably meant...
        (
            '[databases]\nnotes = { url = "n" }\n',
            "unknown key '[databases.notes] url' in config file {path}; did you mean 'uri'?",
        ),
        ("[serach]\nlimit = 3\n", "unknown key 'serach' in config file {path}; did you mean 'search'?"),
        # ...or the keys its table takes.
        (
            '[model]\nmodel = "openai:gpt-4o"\n',
            "unknown key '[model] model' in config file {path}; "
            "[model] takes name, base_url, search_budget, timeout_seconds, images",
        ),
        (
            "[databases]\nnotes = { read_only = true }\n",
            "missing key '[databases.notes] uri' in config file {path}: write uri = \"...\"",
        ),
    ],
)
def test_a_misspelt_or_missing_key_says_which_key_to_write(write_config, toml: str, expected: str) -> None:
    path = write_config(toml)
    with pytest.raises(InputError) as err:
        load_settings()
    assert str(err.value) == expected.format(path=path)


@pytest.mark.parametrize(
    ("toml", "key", "expected"),
    [
        (
            "[databases]\nnotes = { uri = 3 }\n",
            "[databases.notes] uri",
            'expected text in quotes, e.g. uri = "..."',
        ),
        (
            '[databases]\nnotes = { uri = " " }\n',
            "[databases.notes] uri",
            "a database needs a path or URI; it is empty",
        ),
        (
            '[databases]\nnotes = { uri = "n", storage_options = 3 }\n',
            "[databases.notes] storage_options",
            'expected a table, e.g. storage_options = { key = "value" }',
        ),
        (
            '[databases]\nnotes = { uri = "n", read_only = "maybe" }\n',
            "[databases.notes] read_only",
            'expected true or false, got "maybe"',
        ),
        ("embedder = 3\n", "embedder", "expected a table: its keys under a [embedder] heading"),
        (
            "[model]\nsearch_budget = 2.5\n",
            "[model] search_budget",
            "expected a whole number without quotes, got 2.5",
        ),
        (
            '[search]\nvector_weight = "x"\n',
            "[search] vector_weight",
            'expected a number without quotes, got "x"',
        ),
        ("[search]\nvector_weight = 2\n", "[search] vector_weight", "expected a number of at most 1, got 2"),
        (
            "[sandbox]\ntimeout_seconds = 0\n",
            "[sandbox] timeout_seconds",
            "expected a number more than 0, got 0",
        ),
        (
            '[mcp]\nhttp_token = "a-secret"\n',
            "[mcp] http_token",
            "expected at least 16 characters, got fewer",
        ),
        # TOML has real booleans and numbers: a string or a boolean standing in for one is not coerced.
        (
            '[databases]\nnotes = { uri = "n", read_only = "yes" }\n',
            "[databases.notes] read_only",
            'expected true or false, got "yes"',
        ),
        (
            '[databases]\nnotes = { uri = "n", read_only = 1 }\n',
            "[databases.notes] read_only",
            "expected true or false, got 1",
        ),
        (
            "[sandbox]\nmax_executions = true\n",
            "[sandbox] max_executions",
            "expected a whole number without quotes, got true",
        ),
        (
            '[model]\nsearch_budget = "3"\n',
            "[model] search_budget",
            'expected a whole number without quotes, got "3"',
        ),
        ("[search]\nlimit = 5.0\n", "[search] limit", "expected a whole number without quotes, got 5.0"),
        (
            "[search]\nvector_weight = true\n",
            "[search] vector_weight",
            "expected a number without quotes, got true",
        ),
        (
            '[storage]\nwrite_wait_seconds = "5"\n',
            "[storage] write_wait_seconds",
            'expected a number without quotes, got "5"',
        ),
        ("[ingest]\nmax_file_mb = inf\n", "[ingest] max_file_mb", "expected a finite number, got inf"),
        (
            "[sandbox]\ntimeout_seconds = nan\n",
            "[sandbox] timeout_seconds",
            "expected a finite number, got nan",
        ),
        ("[embedder]\nmodel = false\n", "[embedder] model", 'expected text in quotes, e.g. model = "..."'),
        # An empty model string read as "not configured" in one place and as a bad model in another.
        (
            '[model]\nname = ""\n',
            "[model] name",
            "it is empty; give a value or leave the key out for the default",
        ),
        (
            '[embedder]\nmodel = " "\n',
            "[embedder] model",
            "it is empty; give a value or leave the key out for the default",
        ),
        (
            '[databases]\n"my.notes" = { uri = "n", storage_options = { retry = { max = 3 } } }\n',
            '[databases."my.notes".storage_options] retry',
            'expected text in quotes, e.g. retry = "..."',
        ),
    ],
)
def test_a_wrong_value_says_what_to_write_not_pydantic_wording(
    write_config, toml: str, key: str, expected: str
) -> None:
    path = write_config(toml)
    with pytest.raises(InputError) as err:
        load_settings()
    assert str(err.value) == f"invalid value for '{key}' in config file {path}: {expected}"
    assert "a-secret" not in str(err.value)  # a too-short token is never echoed


def test_sources_entries_take_storage_options_and_hide_secrets_when_shown(write_config) -> None:
    from haiku_cli.config.resolved import HIDDEN, resolved_config
    from haiku_cli.ingest.objects import source_options

    write_config(
        """
[sources."s3://lab/"]
storage_options = { region = "eu-west-1", allow_http = true }
[sources."s3://lab/private/"]
storage_options = { region = "us-east-1", aws_secret_access_key = "shh" }
"""
    )
    settings, path = load_settings()
    assert settings.sources["s3://lab/"].storage_options == {"region": "eu-west-1", "allow_http": "true"}
    # The longest matching prefix applies; no match: the database's own options.
    assert source_options(settings, "s3://lab/private/a.md", {})["region"] == "us-east-1"
    assert source_options(settings, "s3://lab/public/a.md", {})["region"] == "eu-west-1"
    assert source_options(settings, "s3://other/a.md", {"region": "db"}) == {"region": "db"}
    shown = resolved_config(settings, path).settings.sources["s3://lab/private/"].storage_options
    assert shown["aws_secret_access_key"] == HIDDEN


def test_a_config_that_is_no_regular_file_or_too_large_is_refused_unread(cli, tmp_path: Path) -> None:
    # /dev/zero never ends and a FIFO without a writer never starts: refused before any byte is read.
    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    for named in ("/dev/zero", str(fifo)):
        result = cli("--config", named, "list")
        assert (result.exit_code, result.stderr) == (
            ExitCode.INPUT,
            f"haiku: config file {named} is not a regular file; name a TOML file\n",
        )
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * MAX_CONFIG_BYTES + "\n")
    result = cli("--config", str(big), "list")
    assert (result.exit_code, result.stderr) == (
        ExitCode.INPUT,
        f"haiku: config file {big} is larger than 1 MB; a config holds settings only: name the right file\n",
    )
    # Just under the bound is read as any config is.
    big.write_text("# " + "x" * (MAX_CONFIG_BYTES - 10) + "\n")
    assert cli("--config", str(big), "databases").exit_code == 0
