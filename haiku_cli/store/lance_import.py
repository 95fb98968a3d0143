"""Importing LanceDB without the REST-namespace client that a haiku database never talks to.

`import lancedb` pulls in `lance_namespace_urllib3_client`, whose package `__init__` builds an OpenAPI
REST client (hundreds of validated endpoint methods): about 0.6 s of a 1 s import on a 2-core machine,
for a client only LanceDB Cloud namespaces use. LanceDB itself needs just the client's `models`
subpackage. So, before the first `import lancedb`, the client package is registered un-executed: its
submodules import normally, and the first lookup of any name on the package itself runs the real
`__init__`. Nothing else changes, so a LanceDB release that imports differently still works (at worst it
triggers the full `__init__` and the import is as slow as before); if the import fails with the package
deferred, the packages are completed and it is retried. `HAIKU_LANCE_IMPORT=plain` turns the deferral off.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

# Packages whose `__init__` is not needed for LanceDB to open local or object-storage databases.
DEFERRED_PACKAGES = ("lance_namespace_urllib3_client",)
SWITCH = "HAIKU_LANCE_IMPORT"


class _DeferredPackage(ModuleType):
    """A package whose `__init__` runs on the first lookup of a name it does not have yet."""

    def __getattr__(self, name: str) -> object:
        # Dunder probes (e.g. `__file__` checks by tools) must not trigger the expensive import.
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        initialise(self)
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


_lock = threading.RLock()


def initialise(module: ModuleType) -> None:
    """Run a deferred package's own `__init__` now (once); a no-op for any other module."""
    with _lock:
        if not isinstance(module, _DeferredPackage):
            return
        module.__class__ = ModuleType  # before executing: lookups during `__init__` must not recurse
        spec = module.__spec__
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(module)


def _defer(name: str) -> bool:
    """Register package `name` un-executed; False (and nothing changed) when that is not possible."""
    if name in sys.modules:
        return False
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _DeferredPackage
    sys.modules[name] = module
    return True


def deferral_enabled() -> bool:
    """Whether the deferral is on (`HAIKU_LANCE_IMPORT=plain` turns it off)."""
    return os.environ.get(SWITCH, "").strip().lower() != "plain"


def import_deferring(module: str, packages: Sequence[str]) -> ModuleType:
    """Import `module` with `packages` registered un-executed first; plainly if that fails or is off."""
    # One thread imports while the others wait here: a module seen in sys.modules may still be half-run.
    with _lock:
        if module in sys.modules:
            return importlib.import_module(module)
        deferred = [name for name in packages if deferral_enabled() and _defer(name)]
        try:
            return importlib.import_module(module)
        except Exception:
            if not deferred:
                raise
            # A release this deferral does not suit: complete the deferred packages and import again.
            for name in deferred:
                initialise(sys.modules[name])
            return importlib.import_module(module)


def import_lancedb() -> ModuleType:
    """The `lancedb` module, imported without the REST-namespace client's `__init__` when possible."""
    return import_deferring("lancedb", DEFERRED_PACKAGES)
