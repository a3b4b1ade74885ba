"""Decorators that only wrap: applying one runs nothing but the creation of a wrapper.

A decorator the index cannot see into counts as registering (applying it may do anything at
import time, so every importer is affected). A repository function whose body only binds
names, defines the wrapper and returns it (through ``functools.wraps``/``update_wrapper``,
``typing.cast``) does nothing when applied: adding or removing it changes what *calls* of the
function do, which the function's covering tests and readers already cover.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from guard_adapters.python.bases import BaseResolver

_WRAPPING = frozenset({"wraps", "update_wrapper", "cast", "partial"})


def _last(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _calls(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def _returns_wrapper(value: ast.expr) -> bool:
    if isinstance(value, ast.Name | ast.Attribute | ast.Constant):
        return True
    if isinstance(value, ast.Call) and _last(value.func) in _WRAPPING:
        return all(_returns_wrapper(a) for a in value.args) and not value.keywords
    return False


def only_wraps(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether applying ``fn`` as a decorator does nothing but build a wrapper."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in stmt.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if _last(target) != "wraps":
                    return False
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if not all(isinstance(t, ast.Name) for t in targets):
                return False  # f.flag = True marks the function: others may read it
            if stmt.value is not None and _calls(stmt.value):
                return False
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None and not _returns_wrapper(stmt.value):
                return False
        else:
            return False
    return True


def calls_through(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether every wrapper a decorator defines returns only through a call of the function
    it wraps (it may raise first, never return something else): a call of the decorated
    function that returns has run its body."""
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if not params:
        return False
    wrapped = params[0]
    wrappers = [s for s in fn.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not wrappers:
        return False
    for wrapper in wrappers:
        if isinstance(wrapper, ast.AsyncFunctionDef):
            return False
        nodes = list(ast.walk(wrapper))
        if any(isinstance(n, ast.Yield | ast.YieldFrom | ast.Lambda) for n in nodes):
            return False
        returns = [n for n in nodes if isinstance(n, ast.Return)]
        if not returns or any(
            n.value is None or not _calls_name(n.value, wrapped) for n in returns
        ):
            return False
        last = wrapper.body[-1]
        if not isinstance(last, ast.Return | ast.Raise):
            return False  # it may fall off the end without calling
    return True


def _calls_name(node: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
        for n in ast.walk(node)
    )


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _definitions(
    statements: list[ast.stmt],
) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """Every def and class in ``statements``, at any depth: only statements hold them, so
    the expressions (most of a module's nodes) are not walked."""
    pending: list[Any] = list(statements)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node
        for block in _BLOCKS:
            children = getattr(node, block, None)
            if isinstance(children, list):
                pending.extend(children)


Applied = tuple[dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef | None]], set[str]]


def _applied(resolver: BaseResolver, tree: ast.Module, module: str | None) -> Applied:
    """The functions the decorators ``tree`` applies bare resolve to, by the decorator's last
    name (``@wrap`` and ``@helpers.wrap`` alike; None where it cannot be read); and the
    names it applies with arguments, ``@name(...)``. Worked out once per tree and resolver
    (one slice of one file)."""
    found = resolver.applied.get(id(tree))
    if found is not None and found[0] is tree:
        return found[1]
    bare: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef | None]] = {}
    called: set[str] = set()
    for node in _definitions(tree.body):
        for d in node.decorator_list:
            if isinstance(d, ast.Call):
                called.add(_last(d.func))
            elif name := _last(d):
                bare.setdefault(name, []).append(resolver.decorator(tree, module, d))
    resolver.applied[id(tree)] = (tree, (bare, called))
    return bare, called


def wrapping_decorators(
    resolver: BaseResolver, tree: ast.Module, module: str | None
) -> tuple[frozenset[str], frozenset[str]]:
    """(names of the decorators ``tree`` applies bare, ``@name`` or ``@module.name`` and never
    ``@name(...)``, every use of which resolves to a repository function that only wraps;
    every decorator name it applies)."""
    bare, called = _applied(resolver, tree, module)
    out = {
        name
        for name, fns in bare.items()
        if name not in called and all(fn is not None and only_wraps(fn) for fn in fns)
    }
    return frozenset(out), frozenset(bare.keys() | called)


def through_decorators(
    resolver: BaseResolver, tree: ast.Module, module: str | None, names: frozenset[str]
) -> frozenset[str]:
    """Which of the wrapping decorator ``names`` call through (:func:`calls_through`): as
    ``tree`` applies them, or as it binds the name where it does not apply it (the side of a
    diff that dropped the decorator)."""
    bare, _ = _applied(resolver, tree, module)

    def through(name: str) -> bool:
        fns = bare.get(name) or [resolver.function(tree, module, name)]
        return all(fn is not None and calls_through(fn) for fn in fns)

    return frozenset(n for n in names if through(n))
