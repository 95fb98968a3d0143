"""Importing LanceDB without the parts a haiku database never uses: REST client, namespace models, Cloud.

`import lancedb` pulls in `lance_namespace_urllib3_client`: its package `__init__` builds an OpenAPI REST
client (hundreds of validated endpoint methods), and its `models` package `__init__` defines all ~150
pydantic request/response models, which `lance_namespace` re-exports; `lancedb` itself imports its
LanceDB Cloud client (`lancedb.remote`), namespace and catalog connections. Together that was most of a
1 s import on a 2-core machine. So, before the first `import lancedb`, those modules are registered
un-executed:

- the REST client package runs its `__init__` on the first lookup of any name on it (its submodules
  import normally);
- on the others, a name their code would define or re-export is handed out as a stand-in that runs the
  module (or imports just the submodule it comes from) on first use: a call, an attribute, `isinstance`,
  subclassing; from then on it forwards to the real object. A local database builds a few namespace
  models and never runs the Cloud, namespace or catalog modules.

The same goes for parts of LanceDB and pyarrow a search never calls, each a few dozen pydantic models or
hundreds of generated functions built at import: `lancedb.functions` (Enterprise function values),
`lancedb.embeddings` (every bundled embedding function: its registry and base classes still import, and
the first lookup of a function by name runs the package, which registers them all) and `pyarrow.compute`
(`pyarrow.dataset` re-exports three of its names; its generated functions run it on first lookup).

On Python 3.11, LanceDB decorates its connection classes' methods with the `overrides` package's
`@override`, which disassembles the class body once per method to find the base classes it checks: about
0.08 CPU-seconds per start. On 3.12 and later LanceDB uses `typing.override`, which only marks the method.
While LanceDB is imported here, `overrides.override` does just that too, and is put back afterwards.

Nothing else changes, so a LanceDB release that imports differently still works: at worst a lookup runs
the module and the import is as slow as before. If the import fails with modules deferred, those never
run are dropped, every stand-in handed out is replaced by the real object wherever a module holds it, and
the import is retried the ordinary way. `HAIKU_LANCE_IMPORT=plain` turns all of this off.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

from haiku_cli.store.export_names import ExportCache

# Packages whose `__init__` is not needed for LanceDB to open local or object-storage databases.
DEFERRED_PACKAGES = ("lance_namespace_urllib3_client",)
# Modules whose names are handed out as stand-ins until first used (parents before children).
STAND_IN_MODULES = (
    "lance_namespace_urllib3_client.models",
    "lancedb.remote",
    "lancedb.remote.db",
    "lancedb.namespace",
    "lancedb.catalog",
    "lancedb.functions",
    "lancedb.embeddings",
    "pyarrow.compute",
)
EMBEDDERS = "lancedb.embeddings"  # the package whose `__init__` registers LanceDB's embedding functions
SWITCH = "HAIKU_LANCE_IMPORT"
# LanceDB takes `@override` from the `overrides` package before Python 3.12, from `typing` after.
OVERRIDES_IN_USE = sys.version_info < (3, 12)

# What `typing` looks up on each member of e.g. `Optional[X]`: not a use of X.
_TYPING_PROBES = frozenset(
    {
        "__typing_subst__",
        "__parameters__",
        "__origin__",
        "__args__",
        "__typing_is_unpacked_typevarlike__",
        "__typing_unpacked_tuple_args__",
        "__unpacked__",
        "__forward_arg__",
    }
)

_lock = threading.RLock()
_stand_ins: list[StandIn] = []


class StandIn:
    """A name a deferred module defines or re-exports: loads the real object on first use, then forwards."""

    __slots__ = ("_module", "_name", "_target")

    def __init__(self, module: str, name: str) -> None:
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_target", None)

    def resolve(self) -> Any:
        """The real object (its module is run or imported on the first call)."""
        target = object.__getattribute__(self, "_target")
        if target is None:
            name = object.__getattribute__(self, "_module")
            module = sys.modules.get(name)
            if isinstance(module, _DeferredModule):
                initialise(module)
            else:
                module = importlib.import_module(name)
            target = getattr(module, object.__getattribute__(self, "_name"))
            object.__setattr__(self, "_target", target)
        return target

    def __getattr__(self, name: str) -> Any:
        if name in _TYPING_PROBES and object.__getattribute__(self, "_target") is None:
            raise AttributeError(name)  # `Union[StandIn, ...]` in a signature must not load it
        return getattr(self.resolve(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.resolve(), name, value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, self.resolve())

    def __subclasscheck__(self, subclass: type) -> bool:
        return issubclass(subclass, self.resolve())

    # `dict | StandIn` in an annotation Python evaluates, `StandIn[int]`: as the real object would.
    def __or__(self, other: Any) -> Any:
        return self.resolve() | other

    def __ror__(self, other: Any) -> Any:
        return other | self.resolve()

    def __getitem__(self, key: Any) -> Any:
        return self.resolve()[key]

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[Any, ...]:
        return (self.resolve(),)  # `class Sub(StandIn)` subclasses the real class

    def __repr__(self) -> str:
        return repr(self.resolve())


class _DeferredModule(ModuleType):
    """A module or package not run yet: it runs on the first lookup of a name it has no stand-in for."""

    def __getattr__(self, name: str) -> object:
        # Dunder probes (e.g. `__file__` checks by tools) must not trigger the expensive import.
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        with _lock:
            if isinstance(self, _DeferredModule):
                exports: dict[str, str] = self.__dict__.get("_haiku_exports") or {}
                if name in exports:
                    stand_in = StandIn(exports[name], name)
                    _stand_ins.append(stand_in)
                    self.__dict__[name] = stand_in
                    return stand_in
                initialise(self)
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


def initialise(module: ModuleType) -> None:
    """Run a deferred module's own code now (once); a no-op for any other module."""
    with _lock:
        if not isinstance(module, _DeferredModule):
            return
        # Back to a plain module before executing: lookups while it runs must not recurse.
        object.__setattr__(module, "__class__", ModuleType)
        module.__dict__.pop("_haiku_exports", None)
        for key in [k for k, v in module.__dict__.items() if isinstance(v, StandIn)]:
            del module.__dict__[key]  # names the code really defines come back as the real objects
        spec = module.__spec__
        assert spec is not None and spec.loader is not None
        try:
            spec.loader.exec_module(module)
        except BaseException:
            if sys.modules.get(module.__name__) is module:
                del sys.modules[module.__name__]  # as a failed ordinary import would leave it
            raise


def _exports(spec: ModuleSpec) -> dict[str, str]:
    """The top-level names a module's code binds, each with the module a stand-in loads it from.

    A name a package re-exports from one of its own submodules comes from that submodule alone.
    """
    name = spec.name
    package = name if spec.submodule_search_locations is not None else name.rpartition(".")[0]
    source = spec.loader.get_source(name) if spec.loader else None  # type: ignore[attr-defined]
    exports: dict[str, str] = {}
    for node in ast.parse(source or "").body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            exports[node.name] = name
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            exports.update((t.id, name) for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import):
            exports.update(((a.asname or a.name).partition(".")[0], name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            source_module = node.module or ""
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source_module = f"{base}.{source_module}" if source_module else base
            own = spec.submodule_search_locations is not None and source_module.startswith(f"{name}.")
            exports.update((a.asname or a.name, source_module if own else name) for a in node.names)
    exports.pop("*", None)
    return exports


def _locate(name: str) -> ModuleSpec | None:
    """Where module `name` lives, without importing it or its parents."""
    parent, _, _ = name.rpartition(".")
    if not parent:
        return importlib.util.find_spec(name)
    loaded = sys.modules.get(parent)
    locations = getattr(loaded, "__path__", None) if loaded is not None else None
    if locations is None:
        parent_spec = _locate(parent)
        locations = parent_spec.submodule_search_locations if parent_spec else None
    if locations is None:
        return None
    return importlib.machinery.PathFinder.find_spec(name, list(locations))


def _defer(name: str, stand_ins: ExportCache | None = None) -> bool:
    """Register module `name` un-executed, with stand-ins for its names when given where they are kept;
    False (and nothing changed) when that is not possible."""
    if name in sys.modules:
        return False
    try:
        spec = _locate(name)
        if spec is None or spec.loader is None or spec.origin is None:
            return False
        if stand_ins is None and spec.submodule_search_locations is None:
            return False
        exports = {} if stand_ins is None else stand_ins.names(name, spec.origin, lambda: _exports(spec))
    except (ImportError, ValueError, OSError, SyntaxError, AttributeError):
        return False
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _DeferredModule
    module.__dict__["_haiku_exports"] = exports
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        vars(sys.modules[parent]).setdefault(child, module)
    return True


def _link_to_parents(names: Sequence[str]) -> None:
    """Make each deferred module an attribute of its parent, as an ordinary import would have."""
    for name in names:
        parent, _, child = name.rpartition(".")
        if name in sys.modules and parent in sys.modules:
            vars(sys.modules[parent]).setdefault(child, sys.modules[name])


def _undo(names: Sequence[str]) -> None:
    """Drop the deferred modules that never ran and put real objects where stand-ins were handed out."""
    for name in names:
        module = sys.modules.get(name)
        if isinstance(module, _DeferredModule):
            del sys.modules[name]
            parent, _, child = name.rpartition(".")
            if parent in sys.modules and vars(sys.modules[parent]).get(child) is module:
                del vars(sys.modules[parent])[child]
    handed_out = {id(s): s for s in _stand_ins}
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            if isinstance(value, StandIn) and id(value) in handed_out:
                with contextlib.suppress(Exception):  # the retried import reports what is really wrong
                    namespace[key] = value.resolve()


def deferral_enabled() -> bool:
    """Whether the deferral is on (`HAIKU_LANCE_IMPORT=plain` turns it off)."""
    return os.environ.get(SWITCH, "").strip().lower() != "plain"


def import_deferring(module: str, packages: Sequence[str], stand_ins: Sequence[str] = ()) -> ModuleType:
    """Import `module` with `packages` and `stand_ins` registered un-executed first; plainly if that fails.

    Names looked up on a `stand_ins` module are handed out as stand-ins; any lookup on the others runs them.
    """
    # One thread imports while the others wait here: a module seen in sys.modules may still be half-run.
    with _lock:
        if module in sys.modules:
            return importlib.import_module(module)
        deferred = []
        if deferral_enabled():
            deferred += [name for name in packages if _defer(name)]
            if stand_ins:
                kept = ExportCache()
                deferred += [name for name in stand_ins if _defer(name, kept)]
                kept.save()
        try:
            imported = importlib.import_module(module)
        except Exception:
            if not deferred:
                raise
            # A release this deferral does not suit: import it the ordinary way.
            _undo(deferred)
            return importlib.import_module(module)
        _link_to_parents(deferred)
        return imported


def mark_override(method: Any = None, **_checks: Any) -> Any:
    """`@override` as `typing.override` does it: mark the method, check nothing (also `@override(...)`)."""
    if method is None:
        return mark_override
    with contextlib.suppress(AttributeError, TypeError):  # e.g. a method wrapper that takes no attributes
        method.__override__ = True
    return method


@contextlib.contextmanager
def marking_overrides(decorators: Sequence[str] = ("override", "overrides")) -> Iterator[None]:
    """While in this block, the `overrides` package's decorators only mark methods (then put back).

    A no-op on Python 3.12 and later (LanceDB uses `typing.override` there), when the deferral is off,
    and when the package is missing or does not have those names.
    """
    if not OVERRIDES_IN_USE or not deferral_enabled():
        yield
        return
    try:
        package = importlib.import_module("overrides")
    except ImportError:
        yield
        return
    saved: dict[str, Callable[..., Any]] = {}
    for name in decorators:
        original = getattr(package, name, None)
        if callable(original):
            saved[name] = original
            setattr(package, name, mark_override)
    try:
        yield
    finally:
        for name, original in saved.items():
            setattr(package, name, original)


def import_lancedb() -> ModuleType:
    """The `lancedb` module, without its REST client, namespace models and Cloud parts when possible."""
    with _lock:
        if "lancedb" in sys.modules:
            return importlib.import_module("lancedb")
        with marking_overrides():
            imported = import_deferring("lancedb", DEFERRED_PACKAGES, STAND_IN_MODULES)
        register_embedders_on_lookup()
        return imported


def register_embedders_on_lookup() -> None:
    """While `lancedb.embeddings` has not run, a lookup of an embedding function by name (a table whose
    schema names one) first runs it: its `__init__` imports the modules that register them."""
    package = sys.modules.get(EMBEDDERS)
    if not isinstance(package, _DeferredModule):
        return
    registry = importlib.import_module(f"{EMBEDDERS}.registry").EmbeddingFunctionRegistry
    lookup = registry.get

    def get(self: Any, name: str) -> Any:
        initialise(package)
        return lookup(self, name)

    registry.get = get
