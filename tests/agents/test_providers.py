"""The provider table a model string is checked against without pydantic-ai, held to pydantic-ai's own."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest
from pydantic_ai.providers import infer_provider_class
from pydantic_ai.providers.gateway import normalize_gateway_provider

from haiku_cli.agents.providers import GATEWAY_ALIASES, PROVIDERS, check_model_string, provider_needs
from haiku_cli.errors import ExitCode, ModelError

PROVIDERS_DIR = Path(importlib.util.find_spec("pydantic_ai.providers").origin).parent  # type: ignore[arg-type, union-attr]


def _cases() -> dict[str, str]:
    """Provider name -> the module under pydantic_ai/providers its class is imported from, read from the
    `match` in pydantic-ai's `infer_provider_class`."""
    tree = ast.parse((PROVIDERS_DIR / "__init__.py").read_text(encoding="utf-8"))
    [function] = [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "infer_provider_class"
    ]
    [match] = [n for n in ast.walk(function) if isinstance(n, ast.Match)]
    found = {}
    for case in match.cases:
        names = [p.value.value for p in ast.walk(case.pattern) if isinstance(p, ast.MatchValue)]
        imports = [n.module for n in ast.walk(case) if isinstance(n, ast.ImportFrom) and n.module]
        found.update(dict.fromkeys(names, imports[0] if imports else ""))
    return found


def _needs(module: str) -> tuple[set[str], set[str]]:
    """(the packages a provider module imports inside `try: ... except ImportError`, the
    pydantic-ai-slim extras its message names)."""
    tree = ast.parse((PROVIDERS_DIR / f"{module}.py").read_text(encoding="utf-8"))
    packages, extras = set(), set()
    for node in tree.body:
        if not isinstance(node, ast.Try):
            continue
        if not any(isinstance(h.type, ast.Name) and h.type.id == "ImportError" for h in node.handlers):
            continue
        for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if isinstance(inner, ast.ImportFrom) and inner.module and inner.level == 0:
                packages.add(inner.module)
            elif isinstance(inner, ast.Import):
                packages.update(alias.name for alias in inner.names)
        extras.update(re.findall(r"pydantic-ai-slim\[([^\]]+)\]", ast.unparse(node)))
    return {p for p in packages if not p.startswith("pydantic_ai")}, extras


def _covers(prefix: str, module: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_the_table_names_exactly_pydantic_ais_providers() -> None:
    assert sorted(PROVIDERS) == sorted(_cases())


@pytest.mark.parametrize("provider", sorted(_cases()))
def test_each_provider_needs_the_packages_and_extra_its_pydantic_ai_module_names(provider: str) -> None:
    imported, extras = _needs(_cases()[provider])
    needs = PROVIDERS[provider]
    assert all(any(_covers(p, m) for p in needs.packages) for m in imported), imported
    assert all(any(_covers(p, m) for m in imported) for p in needs.packages), imported
    assert {needs.extra} - {None} == extras


@pytest.mark.parametrize("provider", sorted(_cases()))
def test_a_model_string_is_refused_for_a_missing_package_exactly_when_pydantic_ai_cannot_load_it(
    provider: str,
) -> None:
    try:
        infer_provider_class(provider)
    except ImportError:
        loads = False
    else:
        loads = True
    try:
        check_model_string(f"{provider}:some-model")
    except ModelError:
        passes = False
    else:
        passes = True
    assert passes == loads


@pytest.mark.parametrize("routed", sorted({*GATEWAY_ALIASES, "openai", "anthropic", "nonsense"}))
def test_gateway_routes_lead_where_pydantic_ais_do(routed: str) -> None:
    canonical = normalize_gateway_provider(f"gateway/{routed}")
    assert provider_needs(f"gateway/{routed}") == PROVIDERS.get(canonical)


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("nonsense", "unknown model 'nonsense': a model looks like provider:model"),
        ("nonsense:gpt-4o", "unknown model provider 'nonsense' in 'nonsense:gpt-4o': a model looks like"),
        ("gateway/nonsense:x", "unknown model provider 'gateway/nonsense' in 'gateway/nonsense:x'"),
    ],
)
def test_an_unknown_model_string_is_refused_in_one_line(name: str, start: str) -> None:
    with pytest.raises(ModelError) as info:
        check_model_string(name)
    assert str(info.value).startswith(start)
    assert info.value.exit_code == ExitCode.MODEL


def test_a_provider_without_its_package_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # what an install without the extra sees
    with pytest.raises(ModelError) as info:
        check_model_string("ollama:llama3.2")
    assert str(info.value) == (
        "cannot use model 'ollama:llama3.2': its provider needs the openai package; "
        'install it with pip install "pydantic-ai-slim[openai]"'
    )
    assert info.value.exit_code == ExitCode.MODEL


@pytest.mark.parametrize("name", ["openai-chat:gpt-4o", "ollama:llama3.2", "test", "gateway/chat:gpt-4o"])
def test_a_known_model_string_passes(name: str) -> None:
    check_model_string(name)
