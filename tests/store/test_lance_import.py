"""Importing LanceDB with its REST-namespace client deferred: what a fresh process loads, fallbacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from haiku_cli.store import lance_import
from haiku_cli.store.lance_import import SWITCH, import_deferring, marking_overrides

REST_CLIENT_API = "lance_namespace_urllib3_client.api"
NAMESPACE_MODELS = "lance_namespace_urllib3_client.models."
# What only adding documents uses: walking folders, ignore rules, conversion.
INGEST_ONLY = {"pathspec", "haiku_cli.ingest.source_walk", "haiku_cli.ingest.pipeline"}


def _models(loaded: set[str]) -> int:
    return sum(name.startswith(NAMESPACE_MODELS) for name in loaded)


# Runs the real CLI in a fresh interpreter and records which modules it had loaded when it exited.
_RUN_CLI = """
import atexit, json, sys
out, args = sys.argv[1], sys.argv[2:]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(
    name + (" (not run)" if type(module).__name__ == "_DeferredModule" else "")
    for name, module in sys.modules.items()
))))
sys.argv = ["haiku", *args]
from haiku_cli.cli.app import main
main()
"""


def _haiku_in_fresh_process(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[str, set[str]]:
    modules = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _RUN_CLI, str(modules), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, set(json.loads(modules.read_text()))


def test_local_full_text_search_loads_no_embedder_agent_or_rest_client(cli, tmp_path: Path) -> None:
    db = str(tmp_path / "notes.lancedb")
    assert cli("add", "Kestrels hover over fields hunting voles.", "--db", db).exit_code == 0
    out, loaded = _haiku_in_fresh_process(
        tmp_path, "search", "--type", "fts", "kestrels", "--db", db, "--json"
    )
    assert [h["content"] for h in json.loads(out)["hits"]] == ["Kestrels hover over fields hunting voles."]
    assert "lancedb" in loaded
    assert not {"onnxruntime", "tokenizers", "pydantic_ai", REST_CLIENT_API, *INGEST_ONLY} & loaded
    assert _models(loaded) < 20  # of about 150: only what opening a local database uses
    # LanceDB Cloud, namespace and catalog connections: imported by name, never run.
    assert {
        "lancedb.remote.db (not run)",
        "lancedb.namespace (not run)",
        "lancedb.catalog (not run)",
        # Enterprise function models, every bundled embedding function, pyarrow's generated functions.
        "lancedb.functions (not run)",
        "lancedb.embeddings (not run)",
        "pyarrow.compute (not run)",
    } <= loaded
    out, loaded = _haiku_in_fresh_process(tmp_path, "list", "--json", "--db", db)
    assert len(json.loads(out)["documents"]) == 1
    assert not {"onnxruntime", "pydantic_ai", REST_CLIENT_API, *INGEST_ONLY} & loaded
    out, loaded = _haiku_in_fresh_process(tmp_path, "info", "--json", "--db", db)
    assert json.loads(out)["documents"] == 1
    assert not {"onnxruntime", "pydantic_ai", REST_CLIENT_API, *INGEST_ONLY} & loaded


def test_with_the_deferral_switched_off_search_still_works(cli, tmp_path: Path) -> None:
    db = str(tmp_path / "notes.lancedb")
    assert cli("add", "Kestrels hover over fields hunting voles.", "--db", db).exit_code == 0
    out, loaded = _haiku_in_fresh_process(
        tmp_path, "search", "--type", "fts", "kestrels", "--db", db, "--json", env={SWITCH: "plain"}
    )
    assert [h["content"] for h in json.loads(out)["hits"]] == ["Kestrels hover over fields hunting voles."]
    assert REST_CLIENT_API in loaded  # the ordinary, complete import happened
    assert _models(loaded) > 100 and {"lancedb.remote.db", "lancedb.namespace"} <= loaded


def test_object_storage_database_works_with_the_deferral(
    cli, write_config, s3_server: str, tmp_path: Path
) -> None:
    write_config(
        f"""
[databases.papers]
uri = "s3://lab/deferral-{tmp_path.name}.lancedb"
storage_options = {{ endpoint = "{s3_server}", allow_http = true, region = "us-east-1" }}
"""
    )
    assert cli("add", "Peregrine falcons stoop at great speed onto prey.").exit_code == 0
    out, loaded = _haiku_in_fresh_process(tmp_path, "search", "--type", "fts", "falcons", "--json")
    assert [(h["database"], h["content"]) for h in json.loads(out)["hits"]] == [
        ("papers", "Peregrine falcons stoop at great speed onto prey.")
    ]
    assert REST_CLIENT_API not in loaded


# Stand-ins for a LanceDB release and its client package, to show what happens when imports change.
_CLIENT = {
    "__init__.py": "RAN_INIT = True\nfrom {client}.models import Model\n",
    "models.py": "class Model:\n    pass\n",
}
_RELEASES = {
    "needs_models": "from {client}.models import Model\n",
    "needs_package_name": "from {client} import RAN_INIT\nfrom {client}.models import Model\n",
    "inspects_package_dict": "import {client}\nassert 'RAN_INIT' in vars({client})\n",
}


def _site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, package: dict[str, str], users: dict[str, str]
) -> Iterator[str]:
    """Write a package named `key_<test>` and its user modules on sys.path; yields the package's name.

    `{key}` in the texts stands for that name; every module imported meanwhile is unloaded afterwards.
    """
    name = f"{key}_{tmp_path.name.replace('-', '_')}"
    root = tmp_path / "site"
    (root / name).mkdir(parents=True)
    for file, text in package.items():
        (root / name / file).write_text(text.format(**{key: name}))
    for user, text in users.items():
        (root / f"{user}_{name}.py").write_text(text.format(**{key: name}))
    monkeypatch.syspath_prepend(str(root))
    before = set(sys.modules)
    yield name
    for module in set(sys.modules) - before:
        del sys.modules[module]


@pytest.fixture
def packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The stand-in client package and releases; yields the client package's name."""
    yield from _site(tmp_path, monkeypatch, "client", _CLIENT, _RELEASES)


def test_a_release_that_needs_only_the_models_leaves_the_package_init_unrun(packages: str) -> None:
    import_deferring(f"needs_models_{packages}", [packages])
    client = sys.modules[packages]
    assert "RAN_INIT" not in vars(client) and f"{packages}.models" in sys.modules
    assert client.RAN_INIT is True  # any later lookup on the package completes it
    assert client.Model is sys.modules[f"{packages}.models"].Model


def test_a_release_that_imports_a_name_from_the_package_gets_it(packages: str) -> None:
    release = import_deferring(f"needs_package_name_{packages}", [packages])
    assert release.RAN_INIT is True


def test_a_release_the_deferral_breaks_is_imported_again_without_it(packages: str) -> None:
    import_deferring(f"inspects_package_dict_{packages}", [packages])
    assert vars(sys.modules[packages])["RAN_INIT"] is True


def test_switched_off_the_package_is_imported_whole(packages: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SWITCH, "plain")
    import_deferring(f"needs_models_{packages}", [packages])
    assert vars(sys.modules[packages])["RAN_INIT"] is True


def test_a_missing_package_is_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"plain_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = import_deferring(name, ["no_such_package_anywhere"])
    assert module.VALUE == 1 and "no_such_package_anywhere" not in sys.modules


def test_threads_importing_at_once_all_get_the_whole_module() -> None:
    code = """
from concurrent.futures import ThreadPoolExecutor
from haiku_cli.store.lance_import import import_lancedb
with ThreadPoolExecutor(8) as pool:
    print(all(pool.map(lambda _: callable(import_lancedb().connect), range(8))))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "True", done.stderr


# A stand-in for the namespace models package: its `__init__` re-exports classes from its submodules.
_LAZY = {
    "__init__.py": "from {lazy}.alpha import Alpha\nfrom .beta import Beta\nRAN_INIT = True\n",
    "alpha.py": "class Alpha:\n    def __init__(self, x: int = 1) -> None:\n        self.x = x\n",
    "beta.py": "class Beta:\n    pass\n",
    "cloud.py": "RAN = True\n\n\nclass Remote:\n    pass\n",
}
_USERS = {
    "builds_later": "from {lazy} import Alpha\n\n\ndef make():\n    return Alpha(x=2)\n",
    "subclasses": "from {lazy} import Alpha\n\n\nclass Sub(Alpha):\n    pass\n",
    "needs_a_real_class": "from {lazy} import Alpha\nassert isinstance(Alpha, type)\n",
    "annotates": (
        "from typing import Optional\nfrom {lazy}.cloud import Remote\n\n\n"
        "def connect(remote: Optional[Remote] = None) -> Remote:\n    return remote or Remote()\n"
    ),
}


@pytest.fixture
def lazy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The stand-in models package and its users; yields the package's name."""
    yield from _site(tmp_path, monkeypatch, "lazy", _LAZY, _USERS)


def test_a_re_exported_class_is_imported_only_when_first_used(lazy: str) -> None:
    user = import_deferring(f"builds_later_{lazy}", [], [lazy])
    assert f"{lazy}.alpha" not in sys.modules and "RAN_INIT" not in vars(sys.modules[lazy])
    made = user.make()
    assert made.x == 2 and isinstance(made, user.Alpha)
    assert type(made) is sys.modules[f"{lazy}.alpha"].Alpha
    assert f"{lazy}.beta" not in sys.modules  # nothing asked for Beta


def test_a_stand_in_can_be_subclassed(lazy: str) -> None:
    user = import_deferring(f"subclasses_{lazy}", [], [lazy])
    assert issubclass(user.Sub, sys.modules[f"{lazy}.alpha"].Alpha) and user.Sub().x == 1


def test_a_user_that_needs_the_real_class_at_import_gets_it(lazy: str) -> None:
    user = import_deferring(f"needs_a_real_class_{lazy}", [], [lazy])
    assert user.Alpha is sys.modules[f"{lazy}.alpha"].Alpha
    assert vars(sys.modules[lazy])["RAN_INIT"] is True and sys.modules[lazy].Beta.__name__ == "Beta"


def test_a_module_used_only_in_signatures_is_not_run(lazy: str) -> None:
    user = import_deferring(f"annotates_{lazy}", [], [f"{lazy}.cloud"])
    cloud = sys.modules[f"{lazy}.cloud"]
    assert "RAN" not in vars(cloud)  # `Optional[Remote]` in a signature is not a use
    remote = user.connect()
    assert vars(cloud)["RAN"] is True and isinstance(remote, cloud.Remote) and isinstance(remote, user.Remote)


# A stand-in for the `overrides` package: its decorator refuses a method that overrides nothing.
_OVERRIDES = {
    "__init__.py": (
        "def override(method=None, **checks):\n"
        "    if method is None:\n"
        "        return lambda m: override(m, **checks)\n"
        "    raise TypeError('checked: ' + method.__name__)\n"
    ),
}
_DECORATED = {
    "decorates": (
        "from {overrides} import override\n\n\n"
        "class Base:\n    def run(self):\n        return 0\n\n\n"
        "class Local(Base):\n    @override\n    def run(self):\n        return 1\n\n"
        "    @override(check_signature=False)\n    def stop(self):\n        return 2\n"
    ),
    "fails": "from {overrides} import override\nraise ImportError('this release is broken')\n",
}


@pytest.fixture
def overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The stand-in `overrides` package, registered under that name, and a module decorating with it."""
    for name in _site(tmp_path, monkeypatch, "overrides", _OVERRIDES, _DECORATED):
        monkeypatch.setitem(sys.modules, "overrides", __import__(name))
        monkeypatch.setattr(lance_import, "OVERRIDES_IN_USE", True)
        yield name


def test_while_lancedb_imports_override_only_marks_methods(overrides: str) -> None:
    checking = sys.modules["overrides"].override
    with marking_overrides():
        user = __import__(f"decorates_{overrides}")
    assert user.Local().run() == 1 and user.Local().stop() == 2
    assert user.Local.run.__override__ is True and user.Local.stop.__override__ is True
    assert sys.modules["overrides"].override is checking  # everyone else gets the checking one again


def test_the_decorator_is_put_back_when_the_import_fails(overrides: str) -> None:
    checking = sys.modules["overrides"].override
    with pytest.raises(ImportError, match="broken"), marking_overrides():
        __import__(f"fails_{overrides}")
    assert sys.modules["overrides"].override is checking


def test_switched_off_or_on_python_3_12_the_decorator_is_left_alone(
    overrides: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SWITCH, "plain")
    with pytest.raises(TypeError, match="checked: run"), marking_overrides():
        __import__(f"decorates_{overrides}")
    monkeypatch.delenv(SWITCH)
    monkeypatch.setattr(lance_import, "OVERRIDES_IN_USE", False)
    with pytest.raises(TypeError, match="checked: run"), marking_overrides():
        __import__(f"decorates_{overrides}")


def test_without_the_overrides_package_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "overrides", None)  # `import overrides` raises ImportError
    monkeypatch.setattr(lance_import, "OVERRIDES_IN_USE", True)
    with marking_overrides():
        pass


def test_lancedb_imported_by_haiku_still_marks_its_overrides() -> None:
    code = """
import sys
from haiku_cli.store.lance_import import import_lancedb
lancedb = import_lancedb()
from lancedb.db import LanceDBConnection
marked = getattr(LanceDBConnection.open_table, "__override__", False)
checking = "overrides" not in sys.modules or sys.modules["overrides"].override.__name__ == "override"
print(marked, checking, callable(lancedb.connect))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True", "True"], done.stderr


def test_an_embedding_function_looked_up_by_name_is_registered() -> None:
    # A table whose schema names an embedding function: LanceDB's registry finds it by name, as when
    # `lancedb.embeddings` ran at import.
    code = """
import sys
from haiku_cli.store.lance_import import import_lancedb
import_lancedb()
print(type(sys.modules["lancedb.embeddings"]).__name__)
from lancedb.embeddings.registry import EmbeddingFunctionRegistry
found = EmbeddingFunctionRegistry.get_instance().get("openai")
print(found.__name__, type(sys.modules["lancedb.embeddings"]).__name__)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["_DeferredModule", "OpenAIEmbeddings", "module"], done.stderr


def test_a_stand_in_in_an_evaluated_annotation_is_the_real_class(lazy: str) -> None:
    alpha = import_deferring(f"needs_a_real_class_{lazy}", [], []).Alpha  # the package run whole
    stand_in = lance_import.StandIn(f"{lazy}.alpha", "Alpha")
    assert (dict | stand_in) == (dict | alpha) and (stand_in | None) == (alpha | None)
