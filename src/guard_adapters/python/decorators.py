"""Decorators that only wrap: applying one runs nothing but the creation of a wrapper.

A decorator the index cannot see into counts as registering (applying it may do anything at
import time, so every importer is affected). A repository function whose body only binds
names, defines the wrapper and returns it (through ``functools.wraps``/``update_wrapper``,
``typing.cast``) does nothing when applied: adding or removing it changes what *calls* of the
function do, which the function's covering tests and readers already cover.
"""

from __future__ import annotations

import ast

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


def wrapping_decorators(
    resolver: BaseResolver, tree: ast.Module, module: str | None
) -> tuple[frozenset[str], frozenset[str]]:
    """(names of the decorators ``tree`` applies bare, ``@name`` and never ``@name(...)``,
    that resolve to a repository function that only wraps; every decorator name it applies)."""
    bare: set[str] = set()
    called: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for d in node.decorator_list:
                (called if isinstance(d, ast.Call) else bare).add(
                    _last(d.func if isinstance(d, ast.Call) else d))  # fmt: skip
    out = set()
    for name in sorted(bare - called - {""}):
        fn = resolver.function(tree, module, name)
        if fn is not None and only_wraps(fn):
            out.add(name)
    return frozenset(out), frozenset(bare | called)
