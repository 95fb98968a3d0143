"""pydantic-ai's model providers as data: a model string is checked without importing pydantic-ai.

Servers check their model string before serving, and pydantic-ai costs more to import than a whole cold
search; the agent it builds is needed only by the first question. The table mirrors pydantic-ai's own
`infer_provider_class` (a test compares the two, names and packages, so it cannot drift).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from haiku_cli.errors import ModelError

EXAMPLES = "openai:gpt-4o, anthropic:claude-sonnet-4-0 or ollama:llama3.2"
GATEWAY = "gateway/"


@dataclass(frozen=True)
class ProviderNeeds:
    """What one provider needs installed: the packages its pydantic-ai module imports, and the
    pydantic-ai-slim extra that installs them (None: nothing beyond pydantic-ai)."""

    packages: tuple[str, ...] = ()
    extra: str | None = None


_OPENAI = ProviderNeeds(("openai",), "openai")
_GOOGLE = ProviderNeeds(("google.genai",), "google")

# Provider name (the part of a model string before ':') -> what it needs.
PROVIDERS: dict[str, ProviderNeeds] = {
    **dict.fromkeys(("openai", "openai-chat", "openai-responses", "openai-decisions"), _OPENAI),
    **dict.fromkeys(("openai-codex", "openai-chatgpt", "deepseek", "openrouter", "vercel"), _OPENAI),
    **dict.fromkeys(("azure", "azure-responses"), _OPENAI),
    **dict.fromkeys(("google", "google-interactions", "google-decisions"), _GOOGLE),
    "google-cloud": ProviderNeeds(("google.auth", "google.genai"), "google"),
    "bedrock": ProviderNeeds(("boto3", "botocore"), "bedrock"),
    "bedrock-mantle": ProviderNeeds(("openai",), "bedrock-mantle"),
    "groq": ProviderNeeds(("groq",), "groq"),
    "anthropic": ProviderNeeds(("anthropic",), "anthropic"),
    "mistral": ProviderNeeds(("mistralai",), "mistral"),
    "cerebras": ProviderNeeds(("openai",), "cerebras"),
    "cohere": ProviderNeeds(("cohere",), "cohere"),
    "system-one": ProviderNeeds(),
    "cloudflare": ProviderNeeds(),
    "cloudflare-decisions": ProviderNeeds(),
    "crusoe": _OPENAI,
    "elevenlabs": ProviderNeeds(),
    "xai": ProviderNeeds(("xai_sdk",), "xai"),
    **dict.fromkeys(("moonshotai", "meta", "fireworks", "together", "heroku"), _OPENAI),
    "huggingface": ProviderNeeds(("huggingface_hub",), "huggingface"),
    **dict.fromkeys(("ollama", "github", "github-copilot", "litellm", "vllm", "nebius"), _OPENAI),
    **dict.fromkeys(("otari", "ovhcloud", "alibaba", "sambanova", "stav"), _OPENAI),
    "sentence-transformers": ProviderNeeds(),
    "snowflake": ProviderNeeds(("openai",), "snowflake"),
    "typesafe": ProviderNeeds(("typesafe_sdk",), "typesafe"),
    "voyageai": ProviderNeeds(("voyageai",), "voyageai"),
    "zai": ProviderNeeds(("openai",), "zai"),
}

# `gateway/NAME` routes: names the gateway spells its own way -> the provider they use.
GATEWAY_ALIASES = {
    "doubleword": "openai-chat",
    "chat": "openai-chat",
    "responses": "openai-responses",
    "converse": "bedrock",
    "google": "google-cloud",
}


def provider_of(name: str) -> str | None:
    """The provider part of model string `name` (before the first ':'), or None when it has none."""
    provider, colon, _ = name.partition(":")
    return provider if colon else None


def provider_needs(provider: str) -> ProviderNeeds | None:
    """What `provider` needs installed, or None when pydantic-ai knows no such provider."""
    if provider.startswith(GATEWAY):
        routed = provider.removeprefix(GATEWAY)
        provider = GATEWAY_ALIASES.get(routed, routed)
    return PROVIDERS.get(provider)


def refuse_unknown_model(name: str, *, checks_provider: bool = True) -> None:
    """Refuse model string `name` when pydantic-ai would not know it: no provider part, or (with
    `checks_provider`; a provider factory of haiku's own, for `[model] base_url`, checks its own) a
    provider it has no class for. `infer_model` refuses these with a bare "Unknown model: nonsense",
    which does not say what a model name looks like."""
    if name == "test":  # pydantic-ai's TestModel
        return
    provider = provider_of(name)
    if provider is None:
        unknown = f"unknown model {name!r}"
    elif checks_provider and provider_needs(provider) is None:
        unknown = f"unknown model provider '{provider}' in {name!r}"
    else:
        return
    raise ModelError(f"{unknown}: a model looks like provider:model, e.g. {EXAMPLES}")


def check_model_string(name: str) -> None:
    """Refuse, with one line, a model string no question could use: one without a provider, an unknown
    provider, or one whose provider's package is not installed. An API key is not looked at here: a
    server without one is served, and each question says what to set."""
    refuse_unknown_model(name)
    needs = provider_needs(provider_of(name) or "")
    missing = [p for p in needs.packages if not _installed(p)] if needs is not None else []
    if needs is not None and missing:
        raise ModelError(
            f"cannot use model '{name}': its provider needs the {', '.join(missing)} package; install it "
            f'with pip install "pydantic-ai-slim[{needs.extra}]"'
        )


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False
