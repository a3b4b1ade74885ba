"""Annotations that no code evaluates when it runs: they read no name.

- A local variable's annotation (``x: T = ...`` inside a function) is never evaluated.
- Under ``from __future__ import annotations`` every annotation is kept as a string, so a
  class or function that holds one reads nothing at import time, unless something evaluates
  it there, and those keep their reads:
  - a decorator that may register (``@app.get``, ``@f.register`` dispatching on it);
  - for a class's own variable annotations, class machinery from outside the repository (a
    base such as an ORM's or a validation library's builds fields from them);
  - for its methods' signatures, a metaclass or class keyword, or a class decorator.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Sequence

import libcst as cst

from guard_adapters.python.purity import PURE_DECORATORS

_BUILTINS = frozenset(dir(builtins))


def enables_lazy_annotations(node: cst.ImportFrom) -> bool:
    """``from __future__ import annotations``."""
    if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
        return False
    if cst.Module([]).code_for_node(node.module) != "__future__":
        return False
    return any(
        isinstance(alias.name, cst.Name) and alias.name.value == "annotations"
        for alias in node.names
    )


def only_pure_decorators(decorators: Sequence[cst.Decorator]) -> bool:
    """Decorators known to wrap or mark without looking at annotations."""
    return all(_last_name(d.decorator) in PURE_DECORATORS for d in decorators)


def parameter_annotations(fn: cst.FunctionDef) -> list[cst.Annotation]:
    p = fn.params
    params = [*p.posonly_params, *p.params, *p.kwonly_params, p.star_arg, p.star_kwarg]
    found = [x.annotation for x in params if isinstance(x, cst.Param) and x.annotation]
    return [*found, fn.returns] if fn.returns is not None else found


def built_in_repository(
    node: cst.ClassDef, dotted: Callable[[cst.CSTNode], list[str]], module: str | None
) -> bool:
    """A class whose creation runs no code from outside the repository that could evaluate
    its annotations: no metaclass or class keyword, pure decorators only, and bases that are
    builtins, standard-library classes or this repository's own (by top-level package)."""
    if node.keywords or not only_pure_decorators(node.decorators):
        return False
    top = module.split(".", 1)[0] if module else None
    for base in node.bases:
        value = base.value
        if isinstance(value, cst.Subscript):  # Generic[T], Base[int]
            value = value.value
        if isinstance(value, cst.Name) and value.value in _BUILTINS and not dotted(value):
            continue
        names = dotted(value) if isinstance(value, cst.Name | cst.Attribute) else []
        if not names:
            return False  # an expression, or a class defined in a function: unknown
        for name in names:
            root = name.split(".", 1)[0]
            if root != top and root not in sys.stdlib_module_names:
                return False
    return True


def _last_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Call):
        node = node.func
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return ""
