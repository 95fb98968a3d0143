"""Choosing and building the model, and one-line errors for everything that can go wrong with it."""

from __future__ import annotations

import pytest
from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelHTTPError,
    UnexpectedModelBehavior,
    UserError,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.test import TestModel

from haiku_cli.agents.model_names import NO_MODEL, model_name
from haiku_cli.agents.models import build_model, model_errors, resolve_model
from haiku_cli.config import load_settings
from haiku_cli.config.settings import ModelSettings
from haiku_cli.errors import ExitCode, ModelError


def test_model_flag_beats_environment_beats_config(write_config, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config('[model]\nname = "openai:from-config"\n')
    assert model_name(load_settings()[0].model) == "openai:from-config"
    monkeypatch.setenv("HAIKU_MODEL", "ollama:from-env")
    settings = load_settings()[0].model
    assert model_name(settings) == "ollama:from-env"
    assert model_name(settings, "openai-chat:from-flag") == "openai-chat:from-flag"


def test_no_model_configured() -> None:
    with pytest.raises(ModelError) as info:
        model_name(ModelSettings(), "  ")
    assert str(info.value) == NO_MODEL
    assert info.value.exit_code == ExitCode.MODEL


def test_a_ready_model_is_used_as_is() -> None:
    model = TestModel()
    assert resolve_model(ModelSettings(), model) is model


def test_openai_compatible_server_from_base_url() -> None:
    model = build_model("openai-chat:local-llm", "http://127.0.0.1:8080/v1")
    assert isinstance(model, OpenAIChatModel)
    assert model.model_name == "local-llm"
    assert model.base_url.startswith("http://127.0.0.1:8080/v1")


def test_base_url_from_config_reaches_the_provider() -> None:
    model = resolve_model(ModelSettings(name="ollama:llama3", base_url="http://127.0.0.1:11434/v1"))
    assert model.base_url.startswith("http://127.0.0.1:11434/v1")


def test_openai_chat_uses_openai_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9999/v1")
    assert build_model("openai-chat:x").base_url.startswith("http://127.0.0.1:9999/v1")


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("openai-chat:gpt-4o", "OPENAI_API_KEY"),  # neither key nor base URL in the environment
        ("ollama:llama3", "OLLAMA_BASE_URL"),
    ],
)
def test_unusable_model_strings_give_one_line(name: str, fragment: str, monkeypatch) -> None:
    for key in ("OLLAMA_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ModelError) as info:
        build_model(name)
    message = str(info.value)
    assert fragment in message and "\n" not in message
    assert message.startswith(f"cannot use model '{name}'")


def test_a_missing_openai_key_also_names_the_base_url_a_local_server_needs(monkeypatch) -> None:
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ModelError) as info:
        build_model("openai-chat:local-model")
    assert str(info.value) == (
        "cannot use model 'openai-chat:local-model': set the OPENAI_API_KEY environment variable (or, for "
        "an OpenAI-compatible server that needs no key, OPENAI_BASE_URL or [model] base_url)"
    )


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("nonsense", "unknown model 'nonsense': "),
        ("nosuchprovider:model", "unknown model provider 'nosuchprovider' in 'nosuchprovider:model': "),
    ],
)
def test_unknown_model_strings_show_the_form_with_an_example(name: str, start: str) -> None:
    with pytest.raises(ModelError) as info:
        build_model(name)
    message = str(info.value)
    assert message.startswith(start) and "provider:model, e.g. openai:" in message and "\n" not in message


def test_unknown_provider_with_a_base_url() -> None:
    with pytest.raises(ModelError, match="unknown model provider 'nosuch'"):
        build_model("nosuch:model", "http://127.0.0.1:1/v1")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            UserError("Set the `X_API_KEY` variable. See https://docs."),
            "cannot use model 'm': Set the `X_API_KEY`",
        ),
        (
            ModelConnectionError("m", "Connection error."),
            "cannot reach the model server at http://h/v1 for 'm'",
        ),
        (ModelHTTPError(401, "m", body={"error": "bad key"}), "rejected the credentials for 'm' (HTTP 401)"),
        (ModelHTTPError(404, "m"), "does not know model 'm' (HTTP 404)"),
        (ModelHTTPError(500, "m", body="boom"), "answered (HTTP 500) for 'm'"),
        (UnexpectedModelBehavior("Exceeded maximum retries"), "did not produce a usable answer"),
        (
            ImportError("Please install `anthropic`. Details."),
            "cannot use model 'm': Please install `anthropic`.",
        ),
    ],
)
def test_model_errors_become_one_line(error: Exception, expected: str) -> None:
    with pytest.raises(ModelError) as info, model_errors("m", "http://h/v1"):
        raise error
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_other_errors_pass_through() -> None:
    with pytest.raises(KeyError), model_errors("m"):
        raise KeyError("bug")


def test_config_base_url_does_not_follow_a_model_of_another_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9999/v1")
    settings = ModelSettings(name="ollama:llama3", base_url="http://127.0.0.1:11434/v1")
    assert resolve_model(settings, "openai-chat:x").base_url.startswith("http://127.0.0.1:9999/v1")
    assert resolve_model(settings, "ollama:qwen3").base_url.startswith("http://127.0.0.1:11434/v1")


def test_no_model_names_no_cli_option_and_leaves_the_wording_to_each_front_door() -> None:
    with pytest.raises(ModelError) as info:
        model_name(ModelSettings())
    assert "--" not in str(info.value) and "HAIKU_MODEL" in str(info.value)
    assert info.value.hint is not None and info.value.hint.action == "choose_model"
