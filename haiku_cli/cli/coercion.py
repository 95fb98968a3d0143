"""Command-line values of plain types taken as they are, so a command does not build pydantic schemas.

typer (0.2x) coerces every parameter's value through a pydantic TypeAdapter built on first use, for each
parameter, given or not: for `haiku search` that is a dozen schemas and typer's adapter module on every
fresh start. A value that is already what its plain annotation asks (a `str` for `str`, digits for `int`,
`bool` for `bool`, strings for `list[str]`) comes out of those adapters unchanged (or as `int(...)`,
`list(...)`, or what the option's own parser returns), so it is passed on here; anything else goes to
typer's own coercion, built then, and is checked and worded exactly as before. With a typer without this
layer nothing is changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, get_args, get_origin

_DIGITS = re.compile(r"[0-9]{1,18}")


def defer_coercion(params: Iterable[Any]) -> None:
    """Give each parameter the pass-through coercion (unless one was built already)."""
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
    except ImportError:
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", None) is not None:
            continue
        if descriptor.file_annotation is not None:
            continue
        param._runtime_param = _deferred_class(RuntimeParam, build_runtime_param)(
            parameter_info=descriptor.parameter_info, annotation=descriptor.annotation, descriptor=descriptor
        )


_made: dict[int, type] = {}


def _deferred_class(base: type, build: Any) -> type:
    """The RuntimeParam subclass (made once per typer)."""
    if id(base) in _made:
        return _made[id(base)]

    @dataclass(frozen=True)
    class Deferred(base):
        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            plain = _as_is(self.annotation, self.parameter_info, value)
            if plain is not _NOT_PLAIN:
                return plain
            return build(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    _made[id(base)] = Deferred
    return Deferred


_NOT_PLAIN = object()
# ParameterInfo fields whose rules typer's coercion applies to a value (range, parser, click type).
_TYPER_HOOKS = ("parser", "click_type", "min", "max")


def _as_is(annotation: Any, info: Any, value: Any) -> Any:
    """What typer's adapter would make of `value`, when that is plain to see; else _NOT_PLAIN."""
    parser = getattr(info, "parser", None)
    if parser is not None and get_origin(annotation) is not list:
        # What typer's adapter does with a parser: calls it, its BadParameter going out unchanged; a
        # ValueError it words itself, so that case is left to it.
        try:
            return parser(value)
        except (ValueError, AssertionError):
            return _NOT_PLAIN
    if any(getattr(info, hook, None) is not None for hook in _TYPER_HOOKS):
        return _NOT_PLAIN  # a click type or range of its own: typer's coercion applies them
    if annotation is str and type(value) is str:
        return value
    if annotation is bool and type(value) is bool:
        return value
    if annotation is int:
        if type(value) is int:
            return value
        if type(value) is str and _DIGITS.fullmatch(value):
            return int(value)
    if get_origin(annotation) is list and isinstance(value, (list, tuple)):
        (item,) = get_args(annotation) or (None,)
        if not value:
            return []
        if item is str and all(type(v) is str for v in value):
            return list(value)
    return _NOT_PLAIN
